// What the shared SQL layer (sql/) writes differently for PostgreSQL, and how its transactions begin.
import pg from 'pg';
import type { Dialect, Mode } from '../sql/driver.ts';

/**
 * PostgreSQL text cannot hold U+0000, but a throttle key may: the username is counted before the
 * login refuses its control characters (contract §3). An injective escape of "%" and NUL keeps
 * such keys apart and storable; every other text is stored as it is.
 */
function postgresText(value: string): string {
  return value.includes('\0') || value.includes('%')
    ? value.replaceAll('%', '%25').replaceAll('\0', '%00')
    : value;
}

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
  forUpdate: ' FOR UPDATE',
  limitAll: 'LIMIT ALL',
  greatest: 'greatest',
  // clock_timestamp(), not now(): a transaction's start would be the same instant all along it.
  nowMs: '(extract(epoch FROM clock_timestamp()) * 1000)::bigint',
  // Transaction-scoped advisory lock on (this class, hashtext(text)): the two-integer lock space is
  // apart from the migrations' one-bigint key; a hash collision only makes two texts wait for each
  // other. Taken in its own statement: under READ COMMITTED the next statement's snapshot then sees
  // everything the previous holder of the lock committed.
  lockText: 'SELECT pg_advisory_xact_lock(4242002, hashtext($1))',
  storedText: (value) => postgresText(value),
  lockGroups: 'LOCK TABLE groups IN SHARE ROW EXCLUSIVE MODE',
  lockUsers: 'LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE',
  // None yet: the group sync plans every run in full here. A generation alone would not do: the
  // sync's transaction keeps writers of groups out (lockGroups), not of memberships, and the mark
  // assumes none wrote between its read and its commit (sql/group-sync-mark.ts).
  groupGeneration: null,
  // The head row of the log (migration 8): its lock orders the entries as their transactions commit.
  sessionLogPosition: 'SELECT epoch::text AS log_epoch, seq AS log_seq FROM session_log_head',
  // A GIN index over the trigrams the fill writes beside the folded text (migration 12).
  trigramIndex: {
    ids: (param) => `SELECT group_id AS id FROM group_trigrams WHERE trigrams @> $${param}::text[]`,
    holds: (param) => `g.id IN (SELECT group_id FROM group_trigrams WHERE trigrams @> $${param}::text[])`,
    value: (trigrams) => trigrams,
    fill: `INSERT INTO group_trigrams (group_id, trigrams)
      SELECT f.group_id, string_to_array(f.trigrams, E'\\n') FROM unnest($1::integer[], $2::text[]) AS f(group_id, trigrams)
      ON CONFLICT (group_id) DO UPDATE SET trigrams = excluded.trigrams`,
  },
  migrationsTable:
    'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)',
  isUniqueViolation: (err) => err instanceof pg.DatabaseError && err.code === '23505',
};
