// The freshness gate: the one way every store keeps an answer from memory exact (docs/freshness.md).
//
// A process keeps some answers in memory (sessions, the group pages). Before it answers a request
// from memory it *catches up*: it learns what every process (this one, another worker, another
// instance, the clubhouse command, an operator's SQL shell) committed before the request arrived, and
// drops from memory whatever that made stale. Only then, synchronously, does it answer from memory.
// Outside that moment the memories answer nothing, and the request goes to the store.
//
// How a catch-up is done is each engine's, in two kinds:
// - synchronous (SQLite): one read of the WAL-index header says whether anything was committed since
//   the last catch-up; only then are the deletion log and the group generation read, in the same turn
//   of the event loop as the answer (sqlite/freshness.ts);
// - one round trip (PostgreSQL, Redis): a catch-up asks the store itself, so it is shared by every
//   request read in the same turn of the event loop (CatchUpRounds below; postgres/catch-up.ts,
//   redis/session-memory.ts with redis/key-events.ts).
// What each memory drops is the same everywhere: the sessions a deletion log names
// (deletion-log.ts), or every group answer when the group generation moved (group-memory.ts).
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

/** A part of a catch-up: reads what its store committed since the last one and applies it to memory. */
export type CatchUpPart = () => Promise<void>;

/**
 * Catch-ups that cost a round trip to a store, shared by every request waiting for one.
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
 */
export class CatchUpRounds {
  readonly #parts: CatchUpPart[] = [];
  /** The catch-up in flight, if any. */
  #current: Promise<void> | null = null;
  /** The catch-up not yet begun, shared by every request arriving until it begins. */
  #next: Promise<void> | null = null;

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

/**
 * How one memory catches up: synchronously (`now`: SQLite's commit watch and logs), or by a round
 * trip shared by the requests of a turn (`rounds`: PostgreSQL's statement, Redis's script).
 */
export type CatchUpSource =
  | { readonly now: (memories: readonly Memory[]) => void }
  | { readonly rounds: CatchUpRounds };

/**
 * The gate over each memory's source. A catch-up of several memories runs the synchronous ones at
 * once and waits for the rounds of the others (one per store: with sessions in Redis and groups in
 * PostgreSQL, a check waits for Redis alone, a group page for both at once). A synchronous catch-up
 * done before the round trip ends is still one begun after the request arrived, which is all an
 * answer needs; a failure of either (SQLITE_BUSY, a store down) sends the request to the store.
 */
export function freshnessGate(
  sources: Readonly<Partial<Record<Memory, CatchUpSource>>>,
  windows: AnswerWindows,
): FreshnessGate {
  // A memory without a source is not kept: there is nothing to catch up.
  const catchUpAt = (source: CatchUpSource | undefined, memories: readonly Memory[]) => {
    if (source === undefined) return null;
    if ('rounds' in source) return source.rounds.caughtUp();
    source.now(memories);
    return null;
  };
  return {
    catchUp(memories) {
      try {
        // The usual cases without a Map: one memory, or memories behind one source.
        const first = sources[memories[0]!];
        if (memories.every((memory) => sources[memory] === first)) return catchUpAt(first, memories);
        // Each source once, with the memories it catches up.
        const bySource = new Map<CatchUpSource | undefined, Memory[]>();
        for (const memory of memories) {
          const listed = bySource.get(sources[memory]);
          if (listed === undefined) bySource.set(sources[memory], [memory]);
          else listed.push(memory);
        }
        const waits: Promise<void>[] = [];
        for (const [source, its] of bySource) {
          const wait = catchUpAt(source, its);
          if (wait !== null) waits.push(wait);
        }
        return waits.length === 0 ? null : Promise.all(waits).then(() => {});
      } catch (err) {
        return Promise.reject(err);
      }
    },
    answerFromMemory: (read, memories) => withWindowsOpen(windows, memories, read),
  };
}
