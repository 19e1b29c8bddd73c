// The embedded store: every store interface on one node:sqlite database in WAL mode, so several
// processes (WORKERS, the admin CLI) can share the file while the server runs. Users, groups, the
// import, the secret, sessions and throttle counters are the shared SQL layer (sql/) over the
// synchronous driver of driver.ts; sessions (sessions.ts) and the group reads (groups.ts) add
// in-process caches, kept exact by one commit watch of the file (commit-watch.ts).
import { randomBytes } from 'node:crypto';
import type { DatabaseSync } from 'node:sqlite';
import type { GroupJson } from '../group-types.ts';
import { sqlFlowStore } from '../sql/flows.ts';
import { sqlGroupSyncStore } from '../sql/group-sync.ts';
import { GROUP_QUERIES as SHARED_GROUP_QUERIES, sqlGroupStore } from '../sql/groups.ts';
import { sqlThrottleStore } from '../sql/throttle.ts';
import { sqlUsernameMaintenance } from '../sql/usernames.ts';
import { secretKey, sqlUserStore } from '../sql/users.ts';
import type { Stores } from '../types.ts';
import { type SharedWatch, sharedWatch, watchCommits } from './commit-watch.ts';
import { sqliteSql } from './dialect.ts';
import { call, mapError, openSqliteDatabase, sqliteDriver } from './driver.ts';
import { cachedSqliteGroups } from './groups.ts';
import { migrateSqlite } from './schema.ts';
import { cachedSqliteSessions } from './sessions.ts';

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
  /** How the group answers are written, to keep them in memory (groups.ts); absent: no group cache. */
  readonly groupJson?: GroupJson;
}

/** Opens the SQLite stores on `path`, migrating first unless told not to. */
export function openSqliteStores(
  path: string,
  options: SqliteOptions = {},
): Stores & { readonly db: DatabaseSync } {
  let db: DatabaseSync;
  let watch: SharedWatch;
  try {
    db = openSqliteDatabase(path, options.busyTimeoutMs);
    if (options.migrate !== false) migrateSqlite(db);
    watch = sharedWatch(watchCommits(db));
  } catch (err) {
    mapError(err);
  }
  const driver = sqliteDriver(db);
  const ping = db.prepare('SELECT 1');
  return {
    db,
    users: sqlUserStore(driver),
    usernames: sqlUsernameMaintenance(driver),
    groups:
      options.groupJson === undefined
        ? sqlGroupStore(driver)
        : cachedSqliteGroups(db, driver, call, watch, options.groupJson),
    groupSync: sqlGroupSyncStore(driver),
    sessions: cachedSqliteSessions(db, call, watch),
    throttle: sqlThrottleStore(driver),
    flows: sqlFlowStore(driver),
    atOnce: (work) => watch.once(work),
    secretKey: () => driver.run(secretKey(randomBytes(32))),
    ping: () =>
      call(() => {
        ping.get();
      }),
    close: () =>
      call(() => {
        if (db.isOpen) db.close();
        // After the connection: the watch's descriptor must outlive SQLite's locks (commit-watch.ts).
        watch.close();
      }),
  };
}
