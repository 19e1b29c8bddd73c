// The one reader of a change log, for every engine and both memories (docs/freshness.md): the
// session deletion log (session-memory.ts) and the group change log (group-log.ts).
//
// Every engine logs each change in the changing transaction (SQLite and PostgreSQL by triggers,
// Redis in the deleting script), under a sequence number that orders the entries as they committed:
// a deleted session (or one ended early, or moved to another user), a user's memberships, a group.
// A catch-up reads a *page*: the entries after the reader's position, and enough about the log to
// tell whether those are really all that happened since. The reader drops what the page names, or,
// when the page cannot be trusted to be complete, empties the whole memory:
// - the log's epoch changed (PostgreSQL: a TRUNCATE of the sessions; Redis: the data was lost);
// - the sequence went backwards (a restored backup);
// - entries after the position were purged before this process read them (it was idle for longer
//   than the log keeps them);
// - the entry at the position is not the one the reader read there (a restored backup that has
//   since logged as many changes again);
// - the page itself shows a hole: it was cut at the most a catch-up reads, or a sequence after the
//   position has no entry.
// Emptying memory is always exact: everything is read again from the store.

/** Where a log stood when something was read: its epoch and the sequence of its newest entry. */
export interface LogPosition {
  readonly epoch: string;
  readonly seq: number;
}

/** What a catch-up read of a change log, after the reader's position. */
export interface LogPage<Entry> extends LogPosition {
  /** The oldest entry the log still keeps; null when it keeps none. */
  readonly first: number | null;
  /**
   * A mark of the entry at the reader's position as the log holds it now; null when it holds none
   * there (purged, or the reader had read nothing).
   */
  readonly markAtPosition: string | null;
  /** The mark of the newest entry (null: not kept): the reader's mark once it has read this page. */
  readonly lastMark: string | null;
  /** What changed after the reader's position (sessions: the hex hashes of the sessions deleted). */
  readonly entries: Iterable<Entry>;
  /** True when the page knows it does not hold every entry after the position. */
  readonly holed?: boolean;
  /**
   * The position the page was read after, when the reader may have moved meanwhile (startAt): a page
   * read after another position than the reader's proves nothing about what followed it.
   */
  readonly after?: number;
}

/** What a reader drops from: a memory. */
interface Forgetting<Entry> {
  forget(entry: Entry): void;
  clear(): void;
}

export class ChangeLogReader<Entry> {
  readonly #memory: Forgetting<Entry>;
  #epoch = '';
  /** The sequence read up to; -1 before the first page. */
  #seq = -1;
  #mark: string | null = null;

  constructor(memory: Forgetting<Entry>) {
    this.#memory = memory;
  }

  /** The sequence to read after (-1: none read yet; the page then names no entries). */
  get seq(): number {
    return this.#seq;
  }

  /** Applies a page read after `seq`: drops what it names, or everything when it is not complete. */
  apply(page: LogPage<Entry>): void {
    if (this.#lost(page)) this.#memory.clear();
    else for (const entry of page.entries) this.#memory.forget(entry);
    this.#epoch = page.epoch;
    this.#seq = page.seq;
    this.#mark = page.lastMark;
  }

  /**
   * Starts a reader that has read nothing yet (and so holds nothing) at `read`, the position of the
   * first thing it keeps: the next page is read after it. Nothing when it has read a page already.
   */
  startAt(read: LogPosition): void {
    if (this.#seq >= 0 || !Number.isSafeInteger(read.seq) || read.seq < 0) return;
    this.#epoch = read.epoch;
    this.#seq = read.seq;
    this.#mark = null;
  }

  /**
   * Whether something read at `read` may enter memory: no entry read since could be about it. A read
   * beyond the position may: the next page holds every entry after the position, its own included.
   */
  admits(read: LogPosition): boolean {
    return this.#seq >= 0 && read.epoch === this.#epoch && read.seq >= this.#seq;
  }

  #lost(page: LogPage<Entry>): boolean {
    const seq = this.#seq;
    if (seq < 0 || page.epoch !== this.#epoch || page.seq < seq || page.holed === true) return true;
    if (page.after !== undefined && page.after !== seq) return true;
    if (page.seq > seq && (page.first === null || page.first > seq + 1)) return true;
    return this.#mark !== null && page.markAtPosition !== null && page.markAtPosition !== this.#mark;
  }
}
