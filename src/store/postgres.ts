// The PostgreSQL store (DATABASE_URL=postgres://…): every store interface on one pool, shared by
// any number of instances. Same semantics as sqlite.ts statement for statement; times are ms in
// BIGINT, which pg returns as strings, hence the Number() on the way out.
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { postgresGroupStore } from './postgres-groups.ts';
import {
  createPool,
  migratePostgres,
  type PostgresConnection,
  postgresConnection,
  query,
  transaction,
} from './postgres-pool.ts';
import type { LoginAdmission, SessionStore, Stores, ThrottleStore, UserRecord, UserStore } from './types.ts';

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

/**
 * PostgreSQL text cannot hold U+0000, but a throttle key may: the username is counted before the
 * login refuses its control characters (contract §3). An injective escape of "%" and NUL keeps
 * such keys apart and storable; every other key is stored as it is.
 */
export function throttleText(value: string): string {
  return value.includes('\0') || value.includes('%')
    ? value.replaceAll('%', '%25').replaceAll('\0', '%00')
    : value;
}

function throttleStore(pool: pg.Pool): ThrottleStore {
  return {
    recordFailure: async (keys, fingerprint, now) => {
      if (keys.length === 0) return;
      // One statement for all keys; rows are locked in key order, so two failures sharing a key
      // (the same client IP) cannot deadlock. GREATEST keeps the latest time, as SQLite's max().
      await query(
        pool,
        `INSERT INTO throttle_failures (key, fingerprint, at) SELECT k, $2, $3 FROM unnest($1::text[]) AS k ORDER BY k
         ON CONFLICT (key, fingerprint) DO UPDATE SET at = greatest(throttle_failures.at, excluded.at)`,
        [[...new Set(keys.map(throttleText))].sort(), fingerprint, now],
        'throttle-record',
      );
    },
    status: async (key, limit, now, windowMs) => {
      const { rows } = await query<{ at: string }>(
        pool,
        'SELECT at FROM throttle_failures WHERE key = $1 AND at > $2 ORDER BY at DESC LIMIT $3',
        [throttleText(key), now - windowMs, limit],
        'throttle-status',
      );
      const found = rows.length;
      if (found < limit) return { count: found, retryAfterMs: 0 };
      // The lock lifts when the limit-th most recent failure leaves the window.
      const oldestCounted = Number(rows[limit - 1]?.at);
      return { count: found, retryAfterMs: Math.max(0, oldestCounted + windowMs - now) };
    },
    clear: async (key) => {
      await query(
        pool,
        'DELETE FROM throttle_failures WHERE key = $1',
        [throttleText(key)],
        'throttle-clear',
      );
    },
    rememberClient: async (username, clientIp, now, ttlMs) => {
      await query(
        pool,
        `INSERT INTO known_clients (username, client_ip, expires_at) VALUES ($1, $2, $3)
         ON CONFLICT (username, client_ip) DO UPDATE SET expires_at = excluded.expires_at`,
        [throttleText(username), throttleText(clientIp), now + ttlMs],
        'known-client-remember',
      );
    },
    isKnownClient: async (username, clientIp, now) =>
      changed(
        await query(
          pool,
          'SELECT 1 FROM known_clients WHERE username = $1 AND client_ip = $2 AND expires_at > $3',
          [throttleText(username), throttleText(clientIp), now],
          'known-client-check',
        ),
      ) > 0,
    purgeExpired: async (now, windowMs) => {
      await query(pool, 'DELETE FROM throttle_failures WHERE at <= $1', [now - windowMs]);
      await query(pool, 'DELETE FROM known_clients WHERE expires_at <= $1', [now]);
    },
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

/** Opens the PostgreSQL stores, migrating first unless told not to. */
export async function openPostgresStores(
  target: string | PostgresConnection,
  options: PostgresOptions = {},
): Promise<Stores & { readonly pool: pg.Pool }> {
  const connection = typeof target === 'string' ? postgresConnection(target) : target;
  if (options.migrate !== false) await migratePostgres(connection);
  const pool = createPool(connection, options.onError);
  await refuseUnsupportedStartup(pool);
  return {
    pool,
    users: userStore(pool),
    groups: postgresGroupStore(pool),
    sessions: sessionStore(pool),
    throttle: throttleStore(pool),
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

/**
 * PgBouncer in transaction mode refuses the pool's timeouts as startup parameters and would then
 * answer every request 503: say so at start-up instead, with the setting that fixes it (issue 17).
 * Any other failure (the server still down) is left to the pool, which recovers by itself.
 */
async function refuseUnsupportedStartup(pool: pg.Pool): Promise<void> {
  try {
    await pool.query('SELECT 1');
  } catch (err) {
    const message = err instanceof Error ? err.message : '';
    if (/unsupported startup parameter/.test(message)) {
      await pool.end();
      throw new Error(
        `PostgreSQL (or a pooler in front of it) refused a connection: ${message}. Behind PgBouncer in transaction mode, set DATABASE_TRANSACTION_POOLER=true.`,
        { cause: err },
      );
    }
  }
}
