// Contract §3: a refusal decided without the authentication backend (a disabled user, a user not
// allowed, a username no backend serves) takes as long as a refused password at that backend would.
// Each backend keeps the durations of its recent bad_credentials answers here, and such a refusal
// waits one of them, drawn at random: the two distributions are then the same, spread included. A
// constant wait (say the median) would match the middle but not the spread, and a prober can repeat
// one probe as often as it likes (an identical guess counts once), until the spread shows.
// Hand-written: a ring buffer and a random index; no library keeps "recent samples to draw from".
import { randomInt } from 'node:crypto';

/** Samples kept: enough to follow the backend's spread, few enough to follow a change of its speed. */
export const REFUSAL_SAMPLES = 64;

export class RefusalTiming {
  readonly #samples: number[] = [];
  readonly #seedMs: number;
  readonly #capacity: number;
  #next = 0;

  /** `seedMs` is waited until a first refusal has been measured (after a start). */
  constructor(seedMs: number, capacity = REFUSAL_SAMPLES) {
    this.#seedMs = seedMs;
    this.#capacity = capacity;
  }

  /**
   * Records how long one bad_credentials answer took, as the login procedure saw it. Never a
   * success or an outage: those take other times, and a refused password is what is imitated.
   */
  record(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    if (this.#samples.length < this.#capacity) this.#samples.push(ms);
    else this.#samples[this.#next] = ms;
    this.#next = (this.#next + 1) % this.#capacity;
  }

  /** How long the next refusal decided without the backend waits: one recent refusal's duration. */
  delayMs(): number {
    const count = this.#samples.length;
    return count === 0 ? this.#seedMs : this.#samples[randomInt(count)]!;
  }
}
