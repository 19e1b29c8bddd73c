import type { DatabaseSync } from 'node:sqlite';
import { type AnswerWindows, answerWindows, CatchUpRounds } from '../freshness/gate.ts';
import type { MemoryOptions } from '../options.ts';
import { GROUP_QUERIES as SHARED_GROUP_QUERIES } from '../sql/groups.ts';
import { type DatabaseStores, sqlStores } from '../sql/stores.ts';
import type { Memory } from '../types.ts';
import { type CommitWatch, watchCommits } from './commit-watch.ts';
import { sqliteSql } from './dialect.ts';
import { call, mapError, openSqliteDatabase, sqliteDriver } from './driver.ts';
import { sqliteCatchUp } from './freshness.ts';
import { sqliteGroupMemory } from './groups.ts';
import { migrateSqlite } from './schema.ts';
import { sqliteSessionMemory } from './sessions.ts';

/** SQL of the two group endpoints as SQLite runs them, so a test can assert their query plans. */
export const GROUP_QUERIES = {
  listForMember: sqliteSql(SHARED_GROUP_QUERIES.listForMember),
  detail: sqliteSql(SHARED_GROUP_QUERIES.detail),
} as const;

export interface SqliteOptions {
  /** How long a statement waits for another process's write lock (SQLITE_BUSY_TIMEOUT_MS). */
  readonly busyTimeoutMs?: number;
  /** Apply pending migrations first (default true; a cluster's workers leave it to the primary). */
  readonly migrate?: boolean;
  /** What to keep in memory; absent: nothing. */
  readonly memory?: MemoryOptions;
  /** The memories' answer windows (open.ts shares them with a Redis session store); made when absent. */
  readonly windows?: AnswerWindows;
}

/** Opens the SQLite stores on `path`, migrating first unless told not to. */
export function openSqliteStores(path: string, options: SqliteOptions = {}): DatabaseStores {
  let db: DatabaseSync;
  try {
    db = openSqliteDatabase(path, options.busyTimeoutMs);
    if (options.migrate !== false) migrateSqlite(db);
  } catch (err) {
    mapError(err);
  }
  const driver = sqliteDriver(db);
  const ping = db.prepare('SELECT 1');
  const { sessions: sessionMemory = null, groups: groupMemory = null } = options.memory ?? {};
  const windows = options.windows ?? answerWindows();
  const sessions =
    sessionMemory === null ? null : sqliteSessionMemory(db, driver, windows.sessions, sessionMemory.capacity);
  const groups =
    groupMemory === null
      ? null
      : sqliteGroupMemory(db, driver, windows.groups, groupMemory.json, groupMemory.limits);
  // The watch holds a descriptor of the -shm file: only a process with memories needs one.
  let watch: CommitWatch | null = null;
  let rounds: CatchUpRounds | null = null;
  const parts: Partial<Record<Memory, () => void>> = {};
  if (sessions !== null) parts.sessions = sessions.catchUp;
  if (groups !== null) parts.groups = groups.catchUp;
  if (sessions !== null || groups !== null) {
    try {
      watch = watchCommits(db);
    } catch (err) {
      db.close();
      mapError(err);
    }
    // One round per turn for both memories: a pread, and the exact checks only when it moved.
    const catchUp = sqliteCatchUp(watch, parts);
    const memories = Object.keys(parts) as Memory[];
    rounds = new CatchUpRounds();
    rounds.add(() => catchUp(memories));
  }
  return sqlStores(
    driver,
    { sessions, groups, rounds, windows },
    {
      engine: { database: 'sqlite', db, redis: null },
      ping: () =>
        call(() => {
          ping.get();
        }),
      tls: { database: 'local', sessions: 'local' },
      close: () =>
        call(() => {
          if (db.isOpen) db.close();
          // After the connection: the watch's descriptor must outlive SQLite's locks (commit-watch.ts).
          watch?.close();
        }),
    },
  );
}
