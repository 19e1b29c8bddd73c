// The freshness gate: the one way every store keeps an answer from memory exact (docs/freshness.md).
//
// A process keeps some answers in memory (sessions, the group pages). Before it answers a request
// from memory it *catches up*: it learns what every process (this one, another worker, another
// instance, the clubhouse command, an operator's SQL shell) committed before the request arrived, and
// drops from memory whatever that made stale. Only then, synchronously, does it answer from memory.
// Outside that moment the memories answer nothing, and the request goes to the store.
//
// A catch-up is shared by every request node read in the same turn of its event loop (CatchUpRounds
// below), and what it does is each engine's:
// - SQLite: synchronous. One read of the WAL-index header says whether anything was committed since
//   the last catch-up; only then are the deletion log and the group generation read
//   (sqlite/freshness.ts);
// - PostgreSQL, Redis: one round trip to the store (postgres/catch-up.ts, redis/session-memory.ts
//   with redis/key-events.ts).
// Sharing one catch-up per turn costs every engine a little latency (an answer waits for the end of
// the turn) and saves SQLite a system call per request, which is what a busy host makes dear
// (docs/benchmarks.md).
// What each memory drops is the same everywhere: what its change log names (change-log.ts): the
// sessions deleted, or the users' and groups' answers a group change touched (group-memory.ts).
import type { FreshnessGate, Memory } from '../types.ts';

/**
 * Whether a memory may answer now: open only inside FreshnessGate.answerFromMemory, right after a
 * catch-up of that memory. A memory holds its window and answers nothing while it is shut.
 */
export class AnswerWindow {
  open = false;
}

/** One AnswerWindow per memory. */
export type AnswerWindows = Readonly<Record<Memory, AnswerWindow>>;

export function answerWindows(): AnswerWindows {
  return { sessions: new AnswerWindow(), groups: new AnswerWindow() };
}

/** Runs `read` with the windows of `memories` open, and shuts them again whatever happens. */
export function withWindowsOpen<T>(windows: AnswerWindows, memories: readonly Memory[], read: () => T): T {
  // The usual cases without an iterator: one memory, or both.
  const sessions = memories.includes('sessions');
  const groups = memories.includes('groups');
  windows.sessions.open = sessions;
  windows.groups.open = groups;
  try {
    return read();
  } finally {
    windows.sessions.open = false;
    windows.groups.open = false;
  }
}

/**
 * A part of a catch-up: reads what its store committed since the last one and applies it to memory;
 * synchronously (SQLite), or by a round trip (the promise).
 */
export type CatchUpPart = () => void | Promise<void>;

/** How long a catch-up may be held for a fuller batch (CatchUpRounds, `batch`). */
const HOLD_MS = 1;

/**
 * Catch-ups shared by every request waiting for one.
 *
 * Why it is exact: a request that calls `caughtUp()` is answered from memory only after a catch-up
 * that *began after it arrived* has been applied. If none is in flight, one begins in this turn's
 * check phase (setImmediate), shared by every request node read in this turn. If one is in flight, it
 * may have read the store before the request arrived, so the request waits for the next one, which
 * begins (again at a check phase) after the current one ends; every request arriving meanwhile
 * shares it. Whatever was committed before the request arrived is therefore seen by its catch-up, and
 * each part has applied it to memory before `caughtUp()` resolves.
 * A catch-up that fails rejects every request waiting on it: those are answered by the store itself
 * (its own StoreUnavailableError is the 503 of contract §2), never from memory.
 *
 * With `batch` (the stores a catch-up is a round trip to: docs/benchmarks.md, "Fuller batches"), the
 * next catch-up is held, once the one in flight ends, until as many requests wait for it as waited
 * then plus as many as that one just answered (busy clients send their next request when answered),
 * or for HOLD_MS at most. Under load each catch-up then serves about every request in flight
 * instead of about half of them, and the stores and the drivers spend about a third less per
 * request; a hold only delays a catch-up, so each still begins after every request waiting on it
 * arrived. What a hold costs: HOLD_MS at most for requests that arrived while a catch-up was in
 * flight, when the clients it answered do not come back at once (a light or open load). Not holding
 * after a hold that ran out, for the next catch-ups, was measured and dropped: on a crowded machine
 * busy clients often take longer than HOLD_MS to come back, and whether none or fewer than half of
 * them came back was the rule, each kept a third more catch-ups. A request arriving while none is in
 * flight is never held.
 */
export class CatchUpRounds {
  readonly #parts: CatchUpPart[] = [];
  readonly #batch: boolean;
  /** The catch-up in flight, if any, and how many requests wait on it. */
  #current: Promise<void> | null = null;
  #currentSize = 0;
  /** The catch-up not yet begun, shared by every request arriving until it begins; how many. */
  #next: Promise<void> | null = null;
  #nextSize = 0;
  /** Begins #next. */
  #beginNext: () => void = () => {};
  /** While #next is held: the timer that ends the hold, and the batch that ends it sooner. */
  #hold: ReturnType<typeof setTimeout> | null = null;
  #holdFor = 0;

  constructor(options: { readonly batch?: boolean } = {}) {
    this.#batch = options.batch === true;
  }

  /** Adds a part: every catch-up runs every part, at the same time. */
  add(part: CatchUpPart): void {
    this.#parts.push(part);
  }

  /**
   * Resolves after a catch-up that began after this call has been applied; rejects when it failed.
   * It begins in the next check phase (setImmediate), not at once: every request node reads in the
   * same turn of its event loop then shares it, where beginning at once would take one round trip for
   * the first request and a second for the rest. It still begins after each of them arrived.
   */
  caughtUp(): Promise<void> {
    if (this.#next !== null) {
      this.#nextSize++;
      if (this.#hold !== null && this.#nextSize >= this.#holdFor) this.#release();
      return this.#next;
    }
    this.#nextSize = 1;
    const next = new Promise<void>((resolve, reject) => {
      this.#beginNext = () => {
        this.#next = null;
        this.#currentSize = this.#nextSize;
        this.#begin().then(resolve, reject);
      };
      if (this.#current === null) {
        setImmediate(this.#beginNext);
        return;
      }
      const answered = this.#currentSize;
      const after = () => {
        if (!this.#batch) {
          setImmediate(this.#beginNext);
          return;
        }
        this.#holdFor = this.#nextSize + answered;
        this.#hold = setTimeout(() => this.#release(), HOLD_MS);
      };
      this.#current.then(after, after);
    });
    this.#next = next;
    return next;
  }

  /** Ends a hold: the batch is full, or the time ran out. */
  #release(): void {
    if (this.#hold !== null) clearTimeout(this.#hold);
    this.#hold = null;
    setImmediate(this.#beginNext);
  }

  #begin(): Promise<void> {
    const parts = this.#parts;
    const round = (async () => {
      if (parts.length === 1) await parts[0]!();
      else await Promise.all(parts.map((part) => part()));
    })();
    this.#current = round;
    const done = () => {
      if (this.#current === round) this.#current = null;
    };
    round.then(done, done);
    return round;
  }
}

/** How one memory catches up: by the rounds of the store that holds it. */
export type CatchUpSource = { readonly rounds: CatchUpRounds };

/**
 * The gate over each memory's source. A catch-up of several memories waits for the rounds of each
 * store they are in, at once (with sessions in Redis and groups in PostgreSQL, a check waits for
 * Redis alone, a group page for both); a failure of any sends the request to the store.
 */
export function freshnessGate(
  sources: Readonly<Partial<Record<Memory, CatchUpSource>>>,
  windows: AnswerWindows,
): FreshnessGate {
  return {
    catchUp(memories) {
      // The usual cases without an array: one memory, or memories behind one store.
      const first = sources[memories[0]!]?.rounds;
      let more: Promise<void>[] | null = null;
      for (let i = 1; i < memories.length; i++) {
        const rounds = sources[memories[i]!]?.rounds;
        if (rounds === undefined || rounds === first) continue;
        more ??= [];
        more.push(rounds.caughtUp());
      }
      // A memory without a source is not kept: nothing to catch up.
      const waiting = first?.caughtUp() ?? null;
      if (more === null) return waiting;
      if (waiting !== null) more.push(waiting);
      return Promise.all(more).then(() => {});
    },
    answerFromMemory: (read, memories) => withWindowsOpen(windows, memories, read),
  };
}
