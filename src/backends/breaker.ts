// Circuit breaker for the IMAP server (contract §5): after `threshold` consecutive unavailable
// answers it fails fast for `openMs`, then lets a single probe through; the probe's outcome closes
// or re-opens it. Hand-written because only one failure class counts and results are values,
// not exceptions, which fits opossum's model poorly.

export type BreakerState = 'closed' | 'open' | 'half_open';

export class CircuitBreaker {
  readonly threshold: number;
  readonly openMs: number;
  readonly #now: () => number;
  #failures = 0;
  #openedAt = 0;
  #state: BreakerState = 'closed';
  #probing = false;

  constructor(options: { threshold: number; openMs: number; now?: () => number }) {
    this.threshold = options.threshold;
    this.openMs = options.openMs;
    this.#now = options.now ?? Date.now;
  }

  get state(): BreakerState {
    if (this.#state === 'open' && this.#now() - this.#openedAt >= this.openMs) return 'half_open';
    return this.#state;
  }

  /** True when an attempt now would fail at once without reaching the server (not a probe slot). */
  get failsFast(): boolean {
    const state = this.state;
    return state === 'open' || (state === 'half_open' && this.#probing);
  }

  /** True when an attempt may go to the server now; in half-open, only one probe at a time. */
  tryAcquire(): boolean {
    const state = this.state;
    if (state === 'closed') return true;
    if (state === 'open' || this.#probing) return false;
    this.#probing = true;
    return true;
  }

  /**
   * Records an attempt's outcome: `down` when the server could not be reached, `up` when it answered,
   * `neutral` when the attempt never reached it (queue full): that only frees the probe slot.
   */
  record(outcome: 'up' | 'down' | 'neutral'): void {
    this.#probing = false;
    if (outcome === 'neutral') return;
    if (outcome === 'up') {
      this.#failures = 0;
      this.#state = 'closed';
      return;
    }
    this.#failures++;
    if (this.#state !== 'closed' || this.#failures >= this.threshold) {
      this.#state = 'open';
      this.#openedAt = this.#now();
    }
  }
}
