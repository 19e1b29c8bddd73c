// A catch-up at PostgreSQL is one statement (freshness/gate.ts: one round trip, shared by every
// request of an event-loop turn): each memory on the database (the group generation, the session
// deletion log) adds its columns, and the statement reads them all. A statement reads one snapshot
// (READ COMMITTED takes one per statement), so each memory's columns are as consistent as when read
// alone, and the statement still begins after every request waiting on it arrived.
//
// Nearly every catch-up finds each log where its reader stands, so it first reads only the heads:
// each log's newest position and the mark at the reader's (a restored backup that has logged as many
// entries again shows there). When every head is still, that is the whole page (no entry after the
// position, the newest entry the one at it) and nothing more is read. When a head moved, a second
// statement reads the whole pages, in a snapshot of its own that also begins after every waiting
// request arrived. The head statement costs PostgreSQL about half the page statement's CPU (its plan
// has two subqueries per log instead of six), and the page statement runs once per change.
import type pg from 'pg';
import type { CatchUpRounds } from '../freshness/gate.ts';
import { query } from './driver.ts';

/** What a statement reads, one column per alias. */
type CatchUpRow = Record<string, unknown>;

/** A memory's part of the statements: its select-list items, their parameters, and what it does with them. */
export interface CatchUpColumns {
  /** Select-list items of the head; their parameters are numbered from `first` ($first, $first+1, …). */
  readonly head: (first: number) => string;
  /** Select-list items of the whole page, with the same parameters. */
  readonly page: (first: number) => string;
  /** The values of those parameters, taken once at each catch-up (the reader's position). */
  readonly values: () => readonly unknown[];
  /** Whether a head row shows the log where the reader stood when `values` was taken. */
  readonly still: (head: CatchUpRow) => boolean;
  /** Applies a row to memory: the head's when every head was still (`whole` false), else the page's. */
  readonly apply: (row: CatchUpRow, whole: boolean) => void;
}

/** The catch-up statements over `pool`: run as the one part of `rounds`. */
export class PostgresCatchUp {
  readonly #parts: CatchUpColumns[] = [];
  #texts: { readonly head: string; readonly page: string } | null = null;

  constructor(pool: pg.Pool, rounds: CatchUpRounds) {
    rounds.add(async () => {
      const parts = this.#parts;
      this.#texts ??= { head: this.#statement('head'), page: this.#statement('page') };
      const values = (
        parts.length === 1 ? parts[0]!.values() : parts.flatMap((part) => part.values())
      ) as unknown[];
      const n = parts.length;
      const head = (await query(pool, this.#texts.head, values, `catch-up-head-${n}`)).rows[0]!;
      let still = true;
      for (const part of parts) still &&= part.still(head);
      if (still) {
        for (const part of parts) part.apply(head, false);
        return;
      }
      const page = (await query(pool, this.#texts.page, values, `catch-up-${n}`)).rows[0]!;
      for (const part of parts) part.apply(page, true);
    });
  }

  /** Adds a memory's columns (before the first catch-up). */
  add(part: CatchUpColumns): void {
    this.#parts.push(part);
    this.#texts = null;
  }

  #statement(which: 'head' | 'page'): string {
    let next = 1;
    const columns = this.#parts.map((part) => {
      const text = part[which](next);
      next += part.values().length;
      return text;
    });
    return `SELECT ${columns.join(', ')}`;
  }
}
