// The one reader of a session deletion log, for every engine (docs/freshness.md).
//
// Every engine logs each deletion of sessions in the deleting transaction (SQLite and PostgreSQL by
// triggers, Redis in the deleting script), under a sequence number that orders the entries as they
// committed; an update that ends a session early or moves it to another user is logged the same way.
// A catch-up reads a *page*: the entries after the reader's position, and enough about the log to
// tell whether those are really all that happened since. The reader evicts what the page names, or,
// when the page cannot be trusted to be complete, empties the whole memory:
// - the log's epoch changed (PostgreSQL: a TRUNCATE of the sessions; Redis: the data was lost);
// - the sequence went backwards (a restored backup);
// - entries after the position were purged before this process read them (it was idle for longer
//   than the log keeps them);
// - the entry at the position is not the one the reader read there (a restored backup that has
//   since logged as many deletions again).
// Emptying memory is always exact: everything is read again from the store.

/** Where a log stood when something was read: its epoch and the sequence of its newest entry. */
export interface LogPosition {
  readonly epoch: string;
  readonly seq: number;
}

/** What a catch-up read of a deletion log, after the reader's position. */
export interface LogPage extends LogPosition {
  /** The oldest entry the log still keeps; null when it keeps none. */
  readonly first: number | null;
  /**
   * A mark of the entry at the reader's position as the log holds it now (one of its hashes); null
   * when it holds none there (purged, or the reader had read nothing).
   */
  readonly markAtPosition: string | null;
  /** The mark of the newest entry (null: not kept): the reader's mark once it has read this page. */
  readonly lastMark: string | null;
  /** The hex hashes of the sessions deleted after the reader's position. */
  readonly hashes: Iterable<string>;
}

/** What a reader evicts from: the session memory (session-memory.ts). */
interface Evicting {
  forget(key: string): void;
  clear(): void;
}

export class DeletionLogReader {
  readonly #memory: Evicting;
  #epoch = '';
  /** The sequence read up to; -1 before the first page. */
  #seq = -1;
  #mark: string | null = null;

  constructor(memory: Evicting) {
    this.#memory = memory;
  }

  /** The sequence to read after (-1: none read yet; the page then names no hashes). */
  get seq(): number {
    return this.#seq;
  }

  /** Applies a page read after `seq`: evicts what it names, or everything when it is not complete. */
  apply(page: LogPage): void {
    if (this.#lost(page)) this.#memory.clear();
    else for (const hash of page.hashes) this.#memory.forget(hash);
    this.#epoch = page.epoch;
    this.#seq = page.seq;
    this.#mark = page.lastMark;
  }

  /** Whether a session read at `read` may enter memory: no entry read since could be about it. */
  admits(read: LogPosition): boolean {
    return this.#seq >= 0 && read.epoch === this.#epoch && read.seq >= this.#seq;
  }

  #lost(page: LogPage): boolean {
    const seq = this.#seq;
    if (seq < 0 || page.epoch !== this.#epoch || page.seq < seq) return true;
    if (page.seq > seq && (page.first === null || page.first > seq + 1)) return true;
    return this.#mark !== null && page.markAtPosition !== null && page.markAtPosition !== this.#mark;
  }
}
