// The embedded store: every store interface on one node:sqlite database in WAL mode, so several
// processes (WORKERS, the admin CLI) can share the file while the server runs.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { StoreUnavailableError } from '../errors.ts';
import { ImportConflictError, type ImportProblem } from '../import.ts';
import { SQLITE_MIGRATIONS } from './sqlite-schema.ts';
import { cachedSqliteSessions } from './sqlite-sessions.ts';
import type {
  Group,
  GroupDetail,
  GroupStore,
  ImportData,
  LoginAdmission,
  Membership,
  Stores,
  ThrottleStore,
  UserRecord,
  UserStore,
} from './types.ts';

// SQLite primary result codes that mean "cannot answer now", not "bad data".
const UNAVAILABLE_CODES = new Set([
  5 /* BUSY */, 6 /* LOCKED */, 8 /* READONLY */, 10 /* IOERR */, 13 /* FULL */, 14 /* CANTOPEN */,
]);

/** Turns SQLite's transient failures into StoreUnavailableError; other errors pass unchanged. */
function mapError(err: unknown): never {
  const errcode = (err as { errcode?: number }).errcode;
  if (typeof errcode === 'number' && UNAVAILABLE_CODES.has(errcode & 0xff)) {
    throw new StoreUnavailableError('database', { cause: err });
  }
  throw err;
}

// Only SQLITE_CONSTRAINT_UNIQUE (2067) means "name taken": a CHECK failure (275) is a bug in the
// validation, not a conflict, and must not be reported as one.
function isUniqueViolation(err: unknown): boolean {
  return (err as { errcode?: number }).errcode === 2067;
}

/** Runs synchronous SQLite work as the async store API expects, with errors mapped. */
function call<T>(work: () => T): Promise<T> {
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

/** The file path of a `sqlite:PATH` database URL. */
export function sqlitePath(databaseUrl: string): string {
  return databaseUrl.replace(/^sqlite:(\/\/)?/, '');
}

/** Opens (creating when needed) the database file with the pragmas every process must share. */
export function openSqliteDatabase(path: string, busyTimeoutMs = 5000): DatabaseSync {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path, { timeout: busyTimeoutMs, enableForeignKeyConstraints: true });
  db.exec(`
    PRAGMA journal_mode = WAL;
    PRAGMA synchronous = NORMAL;
    PRAGMA foreign_keys = ON;
    PRAGMA cache_size = -16384;
    PRAGMA mmap_size = 0;
    PRAGMA temp_store = MEMORY;
  `);
  return db;
}

/** Runs `work` in one IMMEDIATE transaction (the write lock is taken up front: no upgrade deadlocks). */
export function transaction<T>(db: DatabaseSync, work: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = work();
    db.exec('COMMIT');
    return result;
  } catch (err) {
    db.exec('ROLLBACK');
    throw err;
  }
}

/** Applies pending migrations; safe when several processes start at once. Returns the versions applied. */
export function migrateSqlite(db: DatabaseSync): number[] {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT',
  );
  return transaction(db, () => {
    const done = new Set(
      db
        .prepare('SELECT version FROM schema_migrations')
        .all()
        .map((row) => Number(row['version'])),
    );
    const applied: number[] = [];
    for (const migration of SQLITE_MIGRATIONS) {
      if (done.has(migration.version)) continue;
      db.exec(migration.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        migration.version,
        migration.name,
        Date.now(),
      );
      applied.push(migration.version);
    }
    return applied;
  });
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
    status: (key, limit, now, windowMs) =>
      call(() => {
        const rows = recent.all(key, now - windowMs, limit);
        const count = rows.length;
        if (count < limit) return { count, retryAfterMs: 0 };
        // The lock lifts when the limit-th most recent failure leaves the window.
        const oldestCounted = Number(rows[limit - 1]?.['at']);
        return { count, retryAfterMs: Math.max(0, oldestCounted + windowMs - now) };
      }),
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

function toUser(row: Record<string, SQLInputValue>): UserRecord {
  return {
    username: String(row['username']),
    active: Number(row['active']) === 1,
    createdAt: Number(row['created_at']),
    lastLoginAt: row['last_login_at'] === null ? null : Number(row['last_login_at']),
  };
}

function userStore(db: DatabaseSync): UserStore {
  const select = db.prepare(
    'SELECT username, active, created_at, last_login_at FROM users WHERE username = ?',
  );
  const insert = db.prepare(
    'INSERT INTO users (username, active, created_at, last_login_at) VALUES (?, 1, ?, NULL) ON CONFLICT (username) DO NOTHING',
  );
  const touch = db.prepare('UPDATE users SET last_login_at = ? WHERE username = ? AND active = 1');
  const setActive = db.prepare('UPDATE users SET active = ? WHERE username = ?');
  const list = db.prepare('SELECT username, active, created_at, last_login_at FROM users ORDER BY username');
  return {
    get: (username) =>
      call(() => {
        const row = select.get(username);
        return row === undefined ? null : toUser(row);
      }),
    recordLogin: (username, now, allowNew) =>
      call((): LoginAdmission => {
        if (allowNew) insert.run(username, now);
        if (touch.run(now, username).changes > 0) return 'ok';
        return select.get(username) === undefined ? 'unknown' : 'disabled';
      }),
    setActive: (username, active) => call(() => setActive.run(active ? 1 : 0, username).changes > 0),
    list: () => call(() => list.all().map(toUser)),
  };
}

const GROUP_COLUMNS = 'g.id, g.name, g.description, g.short_description, g.activities, g.type';

function toGroup(row: Record<string, SQLInputValue>): Group {
  return {
    id: Number(row['id']),
    name: String(row['name']),
    description: String(row['description']),
    short_description: String(row['short_description']),
    activities: String(row['activities']),
    type: Number(row['type']) === 1 ? 1 : 0,
  };
}

/** SQL of the two group endpoints, exported so a test can assert their query plans. */
export const GROUP_QUERIES = {
  // Prefix scan of the memberships primary key (username, group_id): already in id order, no sort.
  listForMember: `SELECT ${GROUP_COLUMNS} FROM memberships m JOIN groups g ON g.id = m.group_id
    WHERE m.username = ? AND m.status IN (1, 2) ORDER BY m.group_id`,
  // Two primary-key lookups.
  detail: `SELECT ${GROUP_COLUMNS}, coalesce(m.status, -1) AS member_status FROM groups g
    LEFT JOIN memberships m ON m.username = ? AND m.group_id = g.id WHERE g.id = ?`,
} as const;

function groupStore(db: DatabaseSync): GroupStore {
  const listForMember = db.prepare(GROUP_QUERIES.listForMember);
  const detail = db.prepare(GROUP_QUERIES.detail);
  const list = db.prepare(`SELECT ${GROUP_COLUMNS} FROM groups g ORDER BY g.id`);
  const upsertGroup =
    db.prepare(`INSERT INTO groups (id, name, description, short_description, activities, type)
    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name, description = excluded.description,
    short_description = excluded.short_description, activities = excluded.activities, type = excluded.type`);
  const removeGroup = db.prepare('DELETE FROM groups WHERE id = ?');
  const ensureUser = db.prepare(
    'INSERT INTO users (username, active, created_at) VALUES (?, 1, ?) ON CONFLICT (username) DO NOTHING',
  );
  const upsertUser = db.prepare(
    // A null flag creates the user active and leaves an existing one's flag alone (contract §4).
    `INSERT INTO users (username, active, created_at) VALUES (?1, coalesce(?2, 1), ?3)
      ON CONFLICT (username) DO UPDATE SET active = coalesce(?2, users.active)`,
  );
  const upsertMembership = db.prepare(`INSERT INTO memberships (username, group_id, status) VALUES (?, ?, ?)
    ON CONFLICT (username, group_id) DO UPDATE SET status = excluded.status`);
  const groupExists = db.prepare('SELECT 1 FROM groups WHERE id = ?');
  const removeMembership = db.prepare('DELETE FROM memberships WHERE group_id = ? AND username = ?');
  const parkName = db.prepare('UPDATE groups SET name = ? WHERE id = ? AND name <> ?');
  const exportUsers = db.prepare('SELECT username, active FROM users ORDER BY username');
  const exportMemberships = db.prepare(
    'SELECT group_id, username, status FROM memberships ORDER BY group_id, username',
  );
  const writeGroup = (g: Group) =>
    upsertGroup.run(g.id, g.name, g.description, g.short_description, g.activities, g.type);
  const writeMembership = (m: Membership) => {
    ensureUser.run(m.username, Date.now());
    upsertMembership.run(m.username, m.group, m.status);
  };
  return {
    listForMember: (username) => call(() => listForMember.all(username).map(toGroup)),
    detail: (id, username) =>
      call((): GroupDetail | null => {
        const row = detail.get(username, id);
        if (row === undefined) return null;
        const status = Number(row['member_status']);
        return { ...toGroup(row), member_status: status === 0 || status === 1 || status === 2 ? status : -1 };
      }),
    list: () => call(() => list.all().map(toGroup)),
    upsertGroup: (group) =>
      call(() => {
        try {
          writeGroup(group);
        } catch (err) {
          if (!isUniqueViolation(err)) throw err;
          throw new ImportConflictError([
            { path: 'name', reason: `"${group.name}" is already the name of another group` },
          ]);
        }
      }),
    removeGroup: (id) => call(() => removeGroup.run(id).changes > 0),
    setMembership: (membership) =>
      call(() =>
        transaction(db, () => {
          if (groupExists.get(membership.group) === undefined) {
            throw new ImportConflictError([
              { path: 'group', reason: `no group with id ${membership.group}` },
            ]);
          }
          writeMembership(membership);
        }),
      ),
    removeMembership: (group, username) => call(() => removeMembership.run(group, username).changes > 0),
    importData: (data: ImportData) =>
      call(() =>
        transaction(db, () => {
          const now = Date.now();
          const problems: ImportProblem[] = [];
          // UNIQUE is checked per statement (SQLite cannot defer it): move the names this file changes
          // out of the way first, so a file that swaps two names is not refused. A failure rolls back.
          for (const group of data.groups) parkName.run(`import:${randomUUID()}`, group.id, group.name);
          data.groups.forEach((group, index) => {
            try {
              writeGroup(group);
            } catch (err) {
              if (!isUniqueViolation(err)) throw err;
              problems.push({
                path: `groups[${index}].name`,
                reason: `"${group.name}" is already the name of another group`,
              });
            }
          });
          // Sessions of users disabled here are revoked by applyImport, after the commit (contract §2),
          // so that it works wherever the sessions live.
          for (const user of data.users) {
            upsertUser.run(user.username, user.active === null ? null : user.active ? 1 : 0, now);
          }
          data.memberships.forEach((membership, index) => {
            if (groupExists.get(membership.group) === undefined) {
              problems.push({
                path: `memberships[${index}].group`,
                reason: `no group with id ${membership.group}`,
              });
            } else {
              writeMembership(membership);
            }
          });
          // Throwing rolls the whole file back: an invalid file changes nothing (contract §4).
          if (problems.length > 0) throw new ImportConflictError(problems);
          return {
            groups: data.groups.length,
            users: data.users.length,
            memberships: data.memberships.length,
          };
        }),
      ),
    exportData: () =>
      call(() => ({
        groups: list.all().map(toGroup),
        users: exportUsers
          .all()
          .map((row) => ({ username: String(row['username']), active: Number(row['active']) === 1 })),
        memberships: exportMemberships.all().map((row) => ({
          group: Number(row['group_id']),
          username: String(row['username']),
          status: Number(row['status']) as Membership['status'],
        })),
      })),
  };
}

/** Opens the SQLite stores on `path`, migrating first unless `migrate` is false (a cluster's workers). */
export function openSqliteStores(
  path: string,
  busyTimeoutMs = 5000,
  migrate = true,
): Stores & { readonly db: DatabaseSync } {
  let db: DatabaseSync;
  try {
    db = openSqliteDatabase(path, busyTimeoutMs);
    if (migrate) migrateSqlite(db);
  } catch (err) {
    mapError(err);
  }
  const secretRead = db.prepare("SELECT value FROM meta WHERE key = 'throttle_secret'");
  const secretWrite = db.prepare(
    "INSERT INTO meta (key, value) VALUES ('throttle_secret', ?) ON CONFLICT (key) DO NOTHING",
  );
  const ping = db.prepare('SELECT 1');
  return {
    db,
    users: userStore(db),
    groups: groupStore(db),
    sessions: cachedSqliteSessions(db, call),
    throttle: throttleStore(db),
    secretKey: () =>
      call(() => {
        secretWrite.run(randomBytes(32));
        return Buffer.from(secretRead.get()?.['value'] as Uint8Array);
      }),
    ping: () =>
      call(() => {
        ping.get();
      }),
    close: () =>
      call(() => {
        if (db.isOpen) db.close();
      }),
  };
}
