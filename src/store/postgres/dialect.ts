// What the shared SQL layer writes differently for PostgreSQL, and how one connection runs its
// statements (a transaction's, or the migration's own in postgres-pool.ts); postgres-driver.ts
// adapts the pool to the layer.
import pg from 'pg';
import type { Dialect, Mode, Result, Statement } from '../sql/driver.ts';

/** An import may rewrite a big file; its statements get longer than a request's. */
export const BULK_TIMEOUT_MS = 300_000;

/** How each transaction mode of the layer begins. */
export const POSTGRES_BEGIN: Record<Mode, string> = {
  write: 'BEGIN',
  bulk: 'BEGIN',
  snapshot: 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
};

export const POSTGRES_DIALECT: Dialect = {
  rows: (first, columns) =>
    `unnest(${columns.map(([, type], i) => `$${first + i}::${type}[]`).join(', ')}) WITH ORDINALITY AS f(${columns
      .map(([name]) => name)
      .join(', ')}, ord)`,
  bulk: (columns, rows) => columns.map((_, i) => rows.map((row) => row[i])),
  // COLLATE "C": code-point order, as SQLite's BINARY, whatever the database's locale.
  binaryOrder: ' COLLATE "C"',
  randomText: 'gen_random_uuid()::text',
  keyShare: ' FOR KEY SHARE',
  lockGroups: 'LOCK TABLE groups IN SHARE ROW EXCLUSIVE MODE',
  lockUsers: 'LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE',
  migrationsTable:
    'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)',
  isUniqueViolation: (err) => err instanceof pg.DatabaseError && err.code === '23505',
};

export const result = (answer: pg.QueryResult): Result => ({
  rows: answer.rows,
  changes: answer.rowCount ?? 0,
});

/** Runs statements on one connection (a migration's, or a transaction's). */
export const onClient =
  (client: pg.ClientBase, timeoutMs?: number) =>
  async ({ sql, params }: Statement): Promise<Result> =>
    // query_timeout per query is honoured by pg (client.js) though @types/pg does not declare it.
    result(
      await client.query({ text: sql, values: [...params], query_timeout: timeoutMs } as pg.QueryConfig),
    );
