// "Gave up at the deadline, not before" without reading a clock (a loaded machine makes any measured
// time a flake): start a timer of the deadline's length before the attempt. Node runs due timers in
// order of expiry, and timers of one length first in, first out, so a deadline armed later cannot
// fire before this one, however loaded the machine. If the attempt's answer comes while this timer
// has not fired, it gave up early.

export interface ReferenceTimer {
  /** True once the timer has fired. */
  readonly fired: boolean;
  /** Stops the timer (call in `finally`, so a failed test leaves nothing behind). */
  cancel(): void;
}

/** A timer of `ms`, started now, to compare the order of events with. */
export function referenceTimer(ms: number): ReferenceTimer {
  let fired = false;
  const timer = setTimeout(() => {
    fired = true;
  }, ms);
  return {
    get fired() {
      return fired;
    },
    cancel: () => clearTimeout(timer),
  };
}
