// The migration runner of both engines: applies, in one transaction, the versions the database has
// not seen. Each engine keeps its own SQL (sqlite/schema.ts, postgres/schema.ts) and its own way to
// make concurrent starts queue (SQLite's write lock, PostgreSQL's advisory lock).
import type { Dialect, Steps } from './driver.ts';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Applies pending `migrations` in order; returns the versions applied. */
export function* migrate(dialect: Dialect, migrations: readonly Migration[], now: number): Steps<number[]> {
  yield { sql: dialect.migrationsTable, params: [], script: true };
  const { rows } = yield { sql: 'SELECT version FROM schema_migrations', params: [] };
  const done = new Set(rows.map((row) => Number(row['version'])));
  const applied: number[] = [];
  for (const migration of migrations) {
    if (done.has(migration.version)) continue;
    yield { sql: migration.sql, params: [], script: true };
    yield {
      sql: 'INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)',
      params: [migration.version, migration.name, now],
    };
    applied.push(migration.version);
  }
  return applied;
}
