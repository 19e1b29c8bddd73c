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

/**
 * A memory's part of the statements: its select-list items, the one parameter they take (its log
 * reader's position), and what it does with what they read.
 */
export interface CatchUpColumns {
  /** Select-list items of the head; the position is their parameter `$n`. */
  readonly head: (n: number) => string;
  /** Select-list items of the whole page, with the same parameter. */
  readonly page: (n: number) => string;
  /** The log reader's position (−1 before it has one), taken once at each catch-up. */
  readonly position: () => number;
  /** The head's column holding the log's newest position: equal to the one asked, the log is still. */
  readonly newest: string;
  /**
   * Applies a row read after position `asked` to memory: the head's when every head was still
   * (`whole` false: no entry after `asked`, the newest the one at it), else the page's.
   */
  readonly apply: (row: CatchUpRow, whole: boolean, asked: number) => void;
}

/** The catch-up statements over `pool`: run as the one part of `rounds`. */
export class PostgresCatchUp {
  readonly #parts: CatchUpColumns[] = [];
  #texts: { readonly head: string; readonly page: string } | null = null;

  constructor(pool: pg.Pool, rounds: CatchUpRounds) {
    rounds.add(async () => {
      const parts = this.#parts;
      this.#texts ??= { head: this.#statement('head'), page: this.#statement('page') };
      // Each reader's position as this catch-up asks after it (a fill may start a reader meanwhile).
      const asked = parts.map((part) => part.position());
      const n = parts.length;
      const head = (await query(pool, this.#texts.head, asked, `catch-up-head-${n}`)).rows[0]!;
      const still = parts.every((part, i) => asked[i]! >= 0 && Number(head[part.newest]) === asked[i]);
      if (still) {
        for (const [i, part] of parts.entries()) part.apply(head, false, asked[i]!);
        return;
      }
      const page = (await query(pool, this.#texts.page, asked, `catch-up-${n}`)).rows[0]!;
      for (const [i, part] of parts.entries()) part.apply(page, true, asked[i]!);
    });
  }

  /** Adds a memory's columns (before the first catch-up). */
  add(part: CatchUpColumns): void {
    this.#parts.push(part);
    this.#texts = null;
  }

  #statement(which: 'head' | 'page'): string {
    return `SELECT ${this.#parts.map((part, i) => part[which](i + 1)).join(', ')}`;
  }
}
