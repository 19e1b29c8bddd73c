// The PostgreSQL store (DATABASE_URL=postgres://…): every store interface on one pool, shared by
// any number of instances. Same semantics as sqlite.ts statement for statement; times are ms in
// BIGINT, which pg returns as strings, hence the Number() on the way out.
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { postgresGroupStore } from './postgres-groups.ts';
import { createPool, migratePostgres, query, transaction } from './postgres-pool.ts';
import { postgresThrottleStore } from './postgres-throttle.ts';
import type { LoginAdmission, SessionStore, Stores, UserRecord, UserStore } from './types.ts';

const count = (result: pg.QueryResult<{ n: string }>) => Number(result.rows[0]?.n ?? 0);
const changed = (result: pg.QueryResult) => result.rowCount ?? 0;

function sessionStore(pool: pg.Pool): SessionStore {
  return {
    create: async (s) => {
      await query(
        pool,
        'INSERT INTO sessions (id_hash, username, created_at, expires_at) VALUES ($1, $2, $3, $4)',
        [s.idHash, s.username, s.createdAt, s.expiresAt],
        'session-create',
      );
    },
    get: async (idHash, now) => {
      const { rows } = await query<{ username: string; expires_at: string }>(
        pool,
        'SELECT username, expires_at FROM sessions WHERE id_hash = $1 AND expires_at > $2',
        [idHash, now],
        'session-get',
      );
      const row = rows[0];
      return row === undefined ? null : { username: row.username, expiresAt: Number(row.expires_at) };
    },
    delete: async (idHash) =>
      changed(await query(pool, 'DELETE FROM sessions WHERE id_hash = $1', [idHash], 'session-delete')) > 0,
    revokeUser: async (username) =>
      changed(await query(pool, 'DELETE FROM sessions WHERE username = $1', [username], 'session-revoke')),
    countUser: async (username, now) =>
      count(
        await query(
          pool,
          'SELECT count(*) AS n FROM sessions WHERE username = $1 AND expires_at > $2',
          [username, now],
          'session-count-user',
        ),
      ),
    purgeExpired: async (now) =>
      changed(await query(pool, 'DELETE FROM sessions WHERE expires_at <= $1', [now])),
    countActive: async (now) =>
      count(await query(pool, 'SELECT count(*) AS n FROM sessions WHERE expires_at > $1', [now])),
  };
}

interface UserRow {
  username: string;
  active: boolean;
  created_at: string;
  last_login_at: string | null;
}

function toUser(row: UserRow): UserRecord {
  return {
    username: row.username,
    active: row.active,
    createdAt: Number(row.created_at),
    lastLoginAt: row.last_login_at === null ? null : Number(row.last_login_at),
  };
}

const USER_COLUMNS = 'username, active, created_at, last_login_at';

function userStore(pool: pg.Pool): UserStore {
  const get = async (username: string) => {
    const { rows } = await query<UserRow>(
      pool,
      `SELECT ${USER_COLUMNS} FROM users WHERE username = $1`,
      [username],
      'user-get',
    );
    return rows[0] === undefined ? null : toUser(rows[0]);
  };
  return {
    get,
    recordLogin: async (username, now, allowNew): Promise<LoginAdmission> => {
      if (allowNew) {
        await query(
          pool,
          'INSERT INTO users (username, active, created_at, last_login_at) VALUES ($1, true, $2, NULL) ON CONFLICT (username) DO NOTHING',
          [username, now],
          'user-create',
        );
      }
      const touched = await query(
        pool,
        'UPDATE users SET last_login_at = $1 WHERE username = $2 AND active',
        [now, username],
        'user-touch',
      );
      if (changed(touched) > 0) return 'ok';
      return (await get(username)) === null ? 'unknown' : 'disabled';
    },
    setActive: async (username, active) =>
      changed(await query(pool, 'UPDATE users SET active = $1 WHERE username = $2', [active, username])) > 0,
    // COLLATE "C": code-point order, as SQLite's BINARY, whatever the database's locale.
    list: async () =>
      (
        await query<UserRow>(pool, `SELECT ${USER_COLUMNS} FROM users ORDER BY username COLLATE "C"`)
      ).rows.map(toUser),
  };
}

export interface PostgresOptions {
  /** Apply pending migrations first (default true; a cluster's workers leave it to the primary). */
  readonly migrate?: boolean;
  /** Hears of idle connections that broke (logged; the pool replaces them). */
  readonly onError?: (err: Error) => void;
}

/** Opens the PostgreSQL stores on `url`, migrating first unless told not to. */
export async function openPostgresStores(
  url: string,
  options: PostgresOptions = {},
): Promise<Stores & { readonly pool: pg.Pool }> {
  if (options.migrate !== false) await migratePostgres(url);
  const pool = createPool(url, options.onError);
  return {
    pool,
    users: userStore(pool),
    groups: postgresGroupStore(pool),
    sessions: sessionStore(pool),
    throttle: postgresThrottleStore(pool),
    secretKey: () =>
      transaction(pool, async (client) => {
        // Two statements: the SELECT must see a key another instance inserted concurrently.
        await client.query(
          "INSERT INTO meta (key, value) VALUES ('throttle_secret', $1) ON CONFLICT (key) DO NOTHING",
          [randomBytes(32)],
        );
        const { rows } = await client.query<{ value: Buffer }>(
          "SELECT value FROM meta WHERE key = 'throttle_secret'",
        );
        return Buffer.from(rows[0]!.value);
      }),
    ping: async () => {
      await query(pool, 'SELECT 1');
    },
    close: async () => {
      if (!pool.ended) await pool.end();
    },
  };
}
