// One look at what other processes committed, shared by every request waiting for one (issue 24).
// A store whose in-memory answers are made exact by asking the store itself (PostgreSQL's
// group_generation and session deletion log, Redis's session deletion log) needs one round trip per
// look; under load, one look serves every request that arrived while the previous one was out.
//
// Why it is exact: a request that calls `wait()` is answered from memory only after a look that
// *began after it arrived* has completed. If no look is in flight, one begins in this turn's check
// phase (setImmediate), shared by every request read in this turn. If one is in flight, it may have
// read the store before the request arrived, so the request waits for the next one, which begins
// (again at a check phase) after the current one ends; every request arriving meanwhile shares it.
// Whatever was committed before the request arrived is therefore seen by its look, and each part
// (`parts`) applies what it saw to its cache before `wait()` resolves. The answers from memory are
// then given inside `atOnce`, synchronously, which the caches check (`open`): outside it (a Fastify
// route that did not wait) they answer nothing, and the store is asked instead.
// A look that fails rejects every request waiting on it: those are answered by the store itself
// (its own StoreUnavailableError is the 503 of contract §2), never from memory.

/** A part of a look: reads what its store committed since the last look and applies it to its cache. */
export type LookPart = () => Promise<void>;

export class SharedLook {
  readonly #parts: LookPart[] = [];
  /** The look in flight, if any. */
  #current: Promise<void> | null = null;
  /** The look not yet begun, shared by every request arriving until it begins. */
  #next: Promise<void> | null = null;
  #open = false;

  /** Adds a part: every look runs every part, at the same time. */
  add(part: LookPart): void {
    this.#parts.push(part);
  }

  /** True while an answer is given from memory after a look (inside atOnce). */
  get open(): boolean {
    return this.#open;
  }

  /**
   * Resolves after a look that began after this call has been applied; rejects when it failed.
   * The look begins in the next check phase (setImmediate), not at once: every request node reads in
   * the same turn of its event loop then shares it, where beginning at once would take one look for
   * the first request and a second for the rest (one look per request's turn, not two: half the round
   * trips to the store under load). It still begins after each of them arrived.
   */
  wait(): Promise<void> {
    if (this.#next !== null) return this.#next;
    const next = new Promise<void>((resolve, reject) => {
      const begin = () => {
        this.#next = null;
        this.#begin().then(resolve, reject);
      };
      const later = () => setImmediate(begin);
      if (this.#current === null) later();
      else this.#current.then(later, later);
    });
    this.#next = next;
    return next;
  }

  /** Runs `work`, whose caches answer from memory (call it when `wait()` has resolved). */
  atOnce<T>(work: () => T): T {
    this.#open = true;
    try {
      return work();
    } finally {
      this.#open = false;
    }
  }

  #begin(): Promise<void> {
    const parts = this.#parts;
    const look = (async () => {
      if (parts.length === 1) await parts[0]!();
      else await Promise.all(parts.map((part) => part()));
    })();
    this.#current = look;
    const done = () => {
      if (this.#current === look) this.#current = null;
    };
    look.then(done, done);
    return look;
  }
}
