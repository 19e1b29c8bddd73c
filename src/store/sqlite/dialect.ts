// What the shared SQL layer (sql/) writes differently for SQLite, and how its transactions begin.
import type { Column, Dialect, Mode } from '../sql/driver.ts';

/**
 * Milliseconds since the epoch as SQLite computes them, on every SQLite a schema may meet: the
 * triggers run in whichever SQLite writes the file (Debian 12's sqlite3 shell is 3.40), and
 * unixepoch('subsec') is NULL before 3.42. julianday('now') has had millisecond precision throughout.
 */
export const SQLITE_NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

/** The layer's SQL as SQLite runs it: $1 is a named parameter to SQLite, ?1 the numbered one meant. */
export const sqliteSql = (sql: string) => sql.replace(/\$(\d+)/g, '?$1');

/** A bulk column's value as json_each hands it over: bytes travel in JSON as hex. */
const columnValue = ([name, type]: Column, i: number) =>
  type === 'bytea'
    ? `unhex(json_extract(value, '$[${i}]')) AS ${name}`
    : `json_extract(value, '$[${i}]') AS ${name}`;
const jsonValue = (value: unknown) => (Buffer.isBuffer(value) ? value.toString('hex') : value);

export const SQLITE_DIALECT: Dialect = {
  // json_each walks one JSON array of rows; `key` is the row's 0-based index.
  rows: (first, columns) =>
    `(SELECT ${columns.map(columnValue).join(', ')}, key + 1 AS ord FROM json_each($${first})) AS f`,
  bulk: (columns, rows) => [
    JSON.stringify(
      columns.some(([, type]) => type === 'bytea') ? rows.map((row) => row.map(jsonValue)) : rows,
    ),
  ],
  binaryOrder: '',
  randomText: 'lower(hex(randomblob(16)))',
  // The IMMEDIATE transaction holds the write lock: no one deletes or writes anything meanwhile.
  keyShare: '',
  forUpdate: '',
  limitAll: 'LIMIT -1',
  greatest: 'max',
  nowMs: SQLITE_NOW_MS,
  lockText: null,
  storedText: (value) => value,
  lockGroups: null,
  lockUsers: null,
  // Moved by the triggers of migration 6 (schema.ts).
  groupGeneration: 'SELECT value FROM group_generation',
  // The log's entries are numbered by AUTOINCREMENT (migration 3), whose high-water mark survives the
  // purge of the entries; SQLite has no TRUNCATE, so the epoch never moves.
  sessionLogPosition:
    "SELECT '' AS log_epoch, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'session_deletions'), 0) AS log_seq",
  // FTS5's trigram tokenizer cuts the folded text as searchTrigrams does (migration 12); a quoted
  // string of three code points is one trigram, and a quote inside is doubled.
  trigramIndex: {
    ids: (param) => `SELECT rowid AS id FROM group_search WHERE group_search MATCH $${param}`,
    holds: (param) => `g.id IN (SELECT rowid FROM group_search WHERE group_search MATCH $${param})`,
    value: (trigrams) => trigrams.map((t) => `"${t.replaceAll('"', '""')}"`).join(' AND '),
    fill: null,
  },
  migrationsTable:
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT',
  // SQLITE_CONSTRAINT_UNIQUE (2067) and _PRIMARYKEY (1555) mean "taken": a CHECK failure (275) is a
  // bug in the validation, not a conflict, and must not be reported as one.
  isUniqueViolation: (err) => {
    const errcode = (err as { errcode?: number }).errcode;
    return errcode === 2067 || errcode === 1555;
  },
};

/** How each transaction mode of the layer begins: IMMEDIATE takes the write lock up front. */
export const SQLITE_BEGIN: Record<Mode, string> = {
  write: 'BEGIN IMMEDIATE',
  bulk: 'BEGIN IMMEDIATE',
  snapshot: 'BEGIN',
};
