// A catch-up at PostgreSQL is one statement (freshness/gate.ts: one round trip, shared by every
// request of an event-loop turn): each memory on the database (the group generation, the session
// deletion log) adds its columns, and the statement reads them all. A statement reads one snapshot
// (READ COMMITTED takes one per statement), so each memory's columns are as consistent as when read
// alone, and the statement still begins after every request waiting on it arrived.
import type pg from 'pg';
import type { CatchUpRounds } from '../freshness/gate.ts';
import { query } from './driver.ts';

/** A memory's part of the statement: its select-list items, their parameters, and what it does with them. */
export interface CatchUpColumns {
  /** Select-list items; their parameters are numbered from `first` ($first, $first+1, …). */
  readonly columns: (first: number) => string;
  /** The values of those parameters, at each catch-up. */
  readonly values: () => readonly unknown[];
  /** Applies what the statement read (the one row) to memory. */
  readonly apply: (row: Record<string, unknown>) => void;
}

/** The catch-up statement over `pool`: run as the one part of `rounds`. */
export class PostgresCatchUp {
  readonly #parts: CatchUpColumns[] = [];
  #text: string | null = null;

  constructor(pool: pg.Pool, rounds: CatchUpRounds) {
    rounds.add(async () => {
      const parts = this.#parts;
      this.#text ??= this.#statement();
      const values = parts.length === 1 ? parts[0]!.values() : parts.flatMap((part) => part.values());
      const { rows } = await query(pool, this.#text, values as unknown[], `catch-up-${parts.length}`);
      const row = rows[0]!;
      for (const part of parts) part.apply(row);
    });
  }

  /** Adds a memory's columns (before the first catch-up). */
  add(part: CatchUpColumns): void {
    this.#parts.push(part);
    this.#text = null;
  }

  #statement(): string {
    let next = 1;
    const columns = this.#parts.map((part) => {
      const text = part.columns(next);
      next += part.values().length;
      return text;
    });
    return `SELECT ${columns.join(', ')}`;
  }
}
