// One statement per look at PostgreSQL (issue 24): each cache on the database (the group generation,
// the session deletion log) adds its columns, and a look reads them all in one round trip, instead
// of one query per cache. A statement reads one snapshot (READ COMMITTED takes one per statement),
// so each cache's columns are as consistent as when read alone, and the look still begins after
// every request waiting on it arrived (shared-look.ts): each cache sees every commit before it.
import type pg from 'pg';
import type { SharedLook } from '../shared-look.ts';
import { query } from './driver.ts';

/** A cache's part of the look: its select-list items, their parameters, and what it does with them. */
export interface LookColumns {
  /** Select-list items; their parameters are numbered from `first` ($first, $first+1, …). */
  readonly columns: (first: number) => string;
  /** The values of those parameters, at each look. */
  readonly values: () => readonly unknown[];
  /** Applies what the look read (the one row) to the cache. */
  readonly apply: (row: Record<string, unknown>) => void;
}

/** The look's statement over `pool`: run as the one part of `look`. */
export class PostgresLook {
  readonly #parts: LookColumns[] = [];
  #text: string | null = null;

  constructor(pool: pg.Pool, look: SharedLook) {
    look.add(async () => {
      const parts = this.#parts;
      this.#text ??= this.#statement();
      const values = parts.length === 1 ? parts[0]!.values() : parts.flatMap((part) => part.values());
      const { rows } = await query(pool, this.#text, values as unknown[], `cache-look-${parts.length}`);
      const row = rows[0]!;
      for (const part of parts) part.apply(row);
    });
  }

  /** Adds a cache's columns (before the first look). */
  add(part: LookColumns): void {
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
