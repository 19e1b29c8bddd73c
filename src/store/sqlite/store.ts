// The embedded store: every store interface on one node:sqlite database in WAL mode, so several
// processes (WORKERS, the admin CLI) can share the file while the server runs. Users, groups, the
// import, the secret and the migration runner are the shared SQL layer (sql/) over the synchronous
// driver of driver.ts; sessions (sessions.ts) and the group reads (groups.ts) add in-process caches,
// kept exact by one commit watch of the file (commit-watch.ts); throttle counters are written here.
import { randomBytes } from 'node:crypto';
import type { DatabaseSync } from 'node:sqlite';
import { GROUP_QUERIES as SHARED_GROUP_QUERIES } from '../sql/groups.ts';
import { migrate } from '../sql/migrate.ts';
import { sqlUsernameMaintenance } from '../sql/usernames.ts';
import { secretKey, sqlUserStore } from '../sql/users.ts';
import type { Stores, ThrottleStore } from '../types.ts';
import { type SharedWatch, sharedWatch, watchCommits } from './commit-watch.ts';
import {
  call,
  mapError,
  openSqliteDatabase,
  SQLITE_DIALECT,
  sqliteDriver,
  sqliteSql,
  transaction,
} from './driver.ts';
import { cachedSqliteGroups } from './groups.ts';
import { SQLITE_MIGRATIONS } from './schema.ts';
import { cachedSqliteSessions } from './sessions.ts';

// The connection helpers belong to the driver; the SQLite backend's callers (open.ts, the bench
// seeder, tests) find them here with the rest.
export { openSqliteDatabase, sqlitePath, transaction } from './driver.ts';

/** SQL of the two group endpoints as SQLite runs them, so a test can assert their query plans. */
export const GROUP_QUERIES = {
  listForMember: sqliteSql(SHARED_GROUP_QUERIES.listForMember),
  detail: sqliteSql(SHARED_GROUP_QUERIES.detail),
} as const;

/** Applies pending migrations; safe when several processes start at once. Returns the versions applied. */
export function migrateSqlite(db: DatabaseSync): number[] {
  // The IMMEDIATE transaction's write lock makes concurrent starts queue.
  return sqliteDriver(db).runSync(migrate(SQLITE_DIALECT, SQLITE_MIGRATIONS, Date.now()), 'write');
}

function throttleStore(db: DatabaseSync): ThrottleStore {
  const upsert = db.prepare(
    'INSERT INTO throttle_failures (key, fingerprint, at) VALUES (?, ?, ?) ON CONFLICT (key, fingerprint) DO UPDATE SET at = max(at, excluded.at)',
  );
  const recent = db.prepare(
    'SELECT at FROM throttle_failures WHERE key = ? AND at > ? ORDER BY at DESC LIMIT ?',
  );
  const clear = db.prepare('DELETE FROM throttle_failures WHERE key = ?');
  const remember = db.prepare(
    'INSERT INTO known_clients (username, client_ip, expires_at) VALUES (?, ?, ?) ON CONFLICT (username, client_ip) DO UPDATE SET expires_at = excluded.expires_at',
  );
  const known = db.prepare(
    'SELECT 1 FROM known_clients WHERE username = ? AND client_ip = ? AND expires_at > ?',
  );
  const purgeFailures = db.prepare('DELETE FROM throttle_failures WHERE at <= ?');
  const purgeClients = db.prepare('DELETE FROM known_clients WHERE expires_at <= ?');
  // Distinct fingerprints of other guesses in flight that are not already counted as failures.
  const pendingOthers = db.prepare(
    `SELECT count(DISTINCT p.fingerprint) AS n FROM throttle_pending p
     WHERE p.key = ? AND p.expires_at > ? AND p.fingerprint <> ? AND NOT EXISTS (
       SELECT 1 FROM throttle_failures f WHERE f.key = p.key AND f.fingerprint = p.fingerprint AND f.at > ?)`,
  );
  const addPending = db.prepare(
    'INSERT INTO throttle_pending (key, id, fingerprint, expires_at) VALUES (?, ?, ?, ?)',
  );
  const endPending = db.prepare('DELETE FROM throttle_pending WHERE key = ? AND id = ?');
  const purgePending = db.prepare('DELETE FROM throttle_pending WHERE expires_at <= ?');
  return {
    // One IMMEDIATE transaction: the write lock, taken before the count, makes check and add one
    // step for every process on the file.
    beginGuess: (guess, limit, now, windowMs) =>
      call(() =>
        transaction(db, () => {
          if (limit !== null) {
            const failures = recent.all(guess.key, now - windowMs, limit).map((row) => Number(row['at']));
            const pending = Number(
              pendingOthers.get(guess.key, now, guess.fingerprint, now - windowMs)?.['n'],
            );
            if (failures.length + pending >= limit) return { admitted: false, failures, pending };
          }
          addPending.run(guess.key, guess.id, guess.fingerprint, guess.expiresAt);
          return { admitted: true };
        }),
      ),
    endGuess: (guess) =>
      call(() => {
        endPending.run(guess.key, guess.id);
      }),
    recordFailure: (keys, fingerprint, now) =>
      call(() =>
        transaction(db, () => {
          for (const key of keys) upsert.run(key, fingerprint, now);
        }),
      ),
    recentFailures: (key, limit, now, windowMs) =>
      call(() => recent.all(key, now - windowMs, limit).map((row) => Number(row['at']))),
    clear: (key) =>
      call(() => {
        clear.run(key);
      }),
    rememberClient: (username, clientIp, now, ttlMs) =>
      call(() => {
        remember.run(username, clientIp, now + ttlMs);
      }),
    isKnownClient: (username, clientIp, now) => call(() => known.get(username, clientIp, now) !== undefined),
    purgeExpired: (now, windowMs) =>
      call(() => {
        purgeFailures.run(now - windowMs);
        purgeClients.run(now);
        purgePending.run(now);
      }),
  };
}

/** Opens the SQLite stores on `path`, migrating first unless `migrate` is false (a cluster's workers). */
export function openSqliteStores(
  path: string,
  busyTimeoutMs = 5000,
  migrate = true,
): Stores & { readonly db: DatabaseSync } {
  let db: DatabaseSync;
  let watch: SharedWatch;
  try {
    db = openSqliteDatabase(path, busyTimeoutMs);
    if (migrate) migrateSqlite(db);
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
    groups: cachedSqliteGroups(db, driver, call, watch),
    sessions: cachedSqliteSessions(db, call, watch),
    throttle: throttleStore(db),
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
