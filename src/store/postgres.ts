// The PostgreSQL store (DATABASE_URL=postgres://…): every store interface on one pool, shared by
// any number of instances. Users, groups, the import and the secret are the shared SQL layer
// (sql/) over postgres-driver.ts; sessions are written here, throttle counters in
// postgres-throttle.ts. Times are ms in BIGINT, which pg returns as strings, hence the Number().
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { postgresDriver } from './postgres-driver.ts';
import {
  createPool,
  migratePostgres,
  type PostgresConnection,
  postgresConnection,
  query,
} from './postgres-pool.ts';
import { postgresThrottleStore } from './postgres-throttle.ts';
import { GROUP_QUERIES, sqlGroupStore } from './sql/groups.ts';
import { secretKey, sqlUserStore } from './sql/users.ts';
import type { SessionStore, Stores } from './types.ts';

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
  const driver = postgresDriver(pool);
  return {
    pool,
    users: sqlUserStore(driver),
    groups: sqlGroupStore(driver),
    sessions: sessionStore(pool),
    throttle: postgresThrottleStore(pool),
    secretKey: () => driver.run(secretKey(randomBytes(32))),
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
