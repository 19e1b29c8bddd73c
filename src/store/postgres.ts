// The PostgreSQL store (DATABASE_URL=postgres://…): every store interface on one pool, shared by
// any number of instances. Users, groups, the import and the secret are the shared SQL layer
// (sql/) over postgres-driver.ts; sessions and throttle counters are written here. Times are ms in
// BIGINT, which pg returns as strings, hence the Number() on the way out.
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { postgresDriver } from './postgres-driver.ts';
import { createPool, migratePostgres, query } from './postgres-pool.ts';
import { GROUP_QUERIES, sqlGroupStore } from './sql/groups.ts';
import { secretKey, sqlUserStore } from './sql/users.ts';
import type { SessionStore, Stores, ThrottleStore } from './types.ts';

/** The SQL of the two group endpoints as PostgreSQL runs them (postgres-store.test.ts, plans). */
export const POSTGRES_GROUP_QUERIES = GROUP_QUERIES;

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
  const driver = postgresDriver(pool);
  return {
    pool,
    users: sqlUserStore(driver),
    groups: sqlGroupStore(driver),
    sessions: sessionStore(pool),
    throttle: throttleStore(pool),
    secretKey: () => driver.run(secretKey(randomBytes(32))),
    ping: async () => {
      await query(pool, 'SELECT 1');
    },
    close: async () => {
      if (!pool.ended) await pool.end();
    },
  };
}
