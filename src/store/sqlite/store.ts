// The embedded store: every store interface on one node:sqlite database in WAL mode, so several
// processes (WORKERS, the admin CLI) can share the file while the server runs. Users, groups, the
// import, the secret, sessions and throttle counters are the shared SQL layer (sql/) over the
// synchronous driver of driver.ts; a serving process adds its memories of sessions (sessions.ts) and
// of the group pages (groups.ts), kept exact by the synchronous freshness gate (freshness.ts).
import { randomBytes } from 'node:crypto';
import type { DatabaseSync } from 'node:sqlite';
import {
  type AnswerWindows,
  answerWindows,
  CatchUpRounds,
  type CatchUpSource,
  freshnessGate,
} from '../freshness/gate.ts';
import type { MemoryOptions } from '../options.ts';
import { sqlFlowStore } from '../sql/flows.ts';
import { sqlGroupSyncStore } from '../sql/group-sync.ts';
import { GROUP_QUERIES as SHARED_GROUP_QUERIES, sqlGroupStore } from '../sql/groups.ts';
import { sqlSessionStore } from '../sql/sessions.ts';
import { sqlThrottleStore } from '../sql/throttle.ts';
import { sqlUsernameMaintenance } from '../sql/usernames.ts';
import { secretKey, sqlUserStore } from '../sql/users.ts';
import type { Memory, Stores } from '../types.ts';
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

/** A database's stores, and how each of its memories catches up (open.ts composes the gate). */
export type DatabaseStores = Stores & {
  readonly catchUpSources: Readonly<Partial<Record<Memory, CatchUpSource>>>;
};

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
  const parts: Partial<Record<Memory, () => void>> = {};
  if (sessions !== null) parts.sessions = sessions.catchUp;
  if (groups !== null) parts.groups = groups.catchUp;
  const catchUpSources: Partial<Record<Memory, CatchUpSource>> = {};
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
    const rounds = new CatchUpRounds();
    rounds.add(() => catchUp(memories));
    const source = { rounds };
    if (sessions !== null) catchUpSources.sessions = source;
    if (groups !== null) catchUpSources.groups = source;
  }
  return {
    users: sqlUserStore(driver),
    usernames: sqlUsernameMaintenance(driver),
    groups: groups?.store ?? sqlGroupStore(driver),
    groupSync: sqlGroupSyncStore(driver),
    sessions: sessions?.store ?? sqlSessionStore(driver),
    throttle: sqlThrottleStore(driver),
    flows: sqlFlowStore(driver),
    memory: { sessions: sessions?.answers ?? null, groups: groups?.answers ?? null },
    freshness: freshnessGate(catchUpSources, windows),
    catchUpSources,
    engine: { database: 'sqlite', db, redis: null },
    secretKey: () => driver.run(secretKey(randomBytes(32))),
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
  };
}
