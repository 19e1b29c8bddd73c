// The SQLite side of the shared SQL layer: the connection with the pragmas every process shares, its
// failure mapping, its transactions, and the driver that runs the layer's steps synchronously (what
// the layer writes differently for SQLite is dialect.ts).
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { StoreUnavailableError } from '../errors.ts';
import {
  type Mode,
  type Result,
  type SqlDriver,
  type Statement,
  type Steps,
  stepSync,
} from '../sql/driver.ts';
import { SQLITE_BEGIN, SQLITE_DIALECT, sqliteSql } from './dialect.ts';

// SQLite primary result codes that mean "cannot answer now", not "bad data".
const UNAVAILABLE_CODES = new Set([
  5 /* BUSY */, 6 /* LOCKED */, 8 /* READONLY */, 10 /* IOERR */, 13 /* FULL */, 14 /* CANTOPEN */,
]);

/** Turns SQLite's transient failures into StoreUnavailableError; other errors pass unchanged. */
export function mapError(err: unknown): never {
  const errcode = (err as { errcode?: number }).errcode;
  if (typeof errcode === 'number' && UNAVAILABLE_CODES.has(errcode & 0xff)) {
    throw new StoreUnavailableError('database', { cause: err });
  }
  throw err;
}

/** Runs synchronous SQLite work as the async store API expects, with errors mapped. */
export function call<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (err) {
    return Promise.reject(errorOf(err));
  }
}

function errorOf(err: unknown): unknown {
  try {
    mapError(err);
  } catch (mapped) {
    return mapped;
  }
}

/**
 * Opens (creating when needed) the database file with the pragmas every process must share. The page
 * cache is 4 MiB: the session and group memories answer the hot reads, so the page cache serves only
 * their misses (16 MiB of it measured 188 against 161 MiB peak RSS).
 */
export function openSqliteDatabase(path: string, busyTimeoutMs = 5000): DatabaseSync {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path, { timeout: busyTimeoutMs, enableForeignKeyConstraints: true });
  db.exec(`
    PRAGMA journal_mode = WAL;
    PRAGMA synchronous = NORMAL;
    PRAGMA foreign_keys = ON;
    PRAGMA cache_size = -4096;
    PRAGMA mmap_size = 0;
    PRAGMA temp_store = MEMORY;
  `);
  return db;
}

/**
 * Runs `work` in one transaction; IMMEDIATE by default (the write lock is taken up front: no
 * upgrade deadlocks), a plain BEGIN for a read snapshot.
 */
export function transaction<T>(db: DatabaseSync, work: () => T, begin = 'BEGIN IMMEDIATE'): T {
  db.exec(begin);
  try {
    const result = work();
    db.exec('COMMIT');
    return result;
  } catch (err) {
    db.exec('ROLLBACK');
    throw err;
  }
}

export interface SqliteDriver extends SqlDriver {
  /** `run` without the promise: for callers that are synchronous themselves (opening, migrating). */
  runSync<T>(steps: Steps<T>, mode?: Mode): T;
}

const isBoolean = (value: unknown) => typeof value === 'boolean';
const sqliteValue = (value: unknown) => (typeof value === 'boolean' ? Number(value) : value);

/** The driver on `db`: statements are prepared once (by SQL text) and run synchronously. */
export function sqliteDriver(db: DatabaseSync): SqliteDriver {
  const prepared = new Map<string, { statement: StatementSync; reads: boolean }>();
  const prepare = (sql: string) => {
    const statement = db.prepare(sqliteSql(sql));
    const entry = { statement, reads: statement.columns().length > 0 };
    prepared.set(sql, entry);
    return entry;
  };
  const exec = ({ sql, params, script }: Statement): Result => {
    if (script === true) {
      db.exec(sql);
      return { rows: [], changes: 0 };
    }
    const { statement, reads } = prepared.get(sql) ?? prepare(sql);
    // SQLite has no booleans: TRUE is 1.
    const values = (params.some(isBoolean) ? params.map(sqliteValue) : params) as SQLInputValue[];
    if (reads) {
      const rows = statement.all(...values);
      return { rows, changes: rows.length };
    }
    return { rows: [], changes: Number(statement.run(...values).changes) };
  };
  const runSync = <T>(steps: Steps<T>, mode?: Mode): T =>
    mode === undefined
      ? stepSync(steps, exec)
      : transaction(db, () => stepSync(steps, exec), SQLITE_BEGIN[mode]);
  return {
    dialect: SQLITE_DIALECT,
    runSync,
    run: (steps, mode) => call(() => runSync(steps, mode)),
  };
}
