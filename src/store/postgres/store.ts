// The PostgreSQL store (DATABASE_URL=postgres://…): every store interface on one pool, shared by
// any number of instances. Users, groups, the import and the secret are the shared SQL layer
// (sql/) over postgres-driver.ts; sessions are written here, throttle counters in
// throttle.ts. Times are ms in BIGINT, which pg returns as strings, hence the Number().
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { GROUP_QUERIES, sqlGroupStore } from '../sql/groups.ts';
import { sqlUsernameMaintenance } from '../sql/usernames.ts';
import { secretKey, sqlUserStore } from '../sql/users.ts';
import type { SessionStore, StoredSession, Stores } from '../types.ts';
import { postgresDriver } from './driver.ts';
import {
  createPool,
  migratePostgres,
  type PostgresConnection,
  postgresConnection,
  query,
  transaction,
} from './pool.ts';
import { postgresThrottleStore } from './throttle.ts';

/** The SQL of the two group endpoints as PostgreSQL runs them (store-postgres.test.ts, plans). */
export const POSTGRES_GROUP_QUERIES = GROUP_QUERIES;

const count = (result: pg.QueryResult<{ n: string }>) => Number(result.rows[0]?.n ?? 0);
const changed = (result: pg.QueryResult) => result.rowCount ?? 0;

interface SessionRow {
  id_hash: Buffer;
  created_at: string;
  expires_at: string;
  last_seen: string | null;
  client_ip: string | null;
  user_agent: string | null;
}

const storedSession = (row: SessionRow): StoredSession => ({
  idHash: row.id_hash,
  createdAt: Number(row.created_at),
  expiresAt: Number(row.expires_at),
  lastSeen: row.last_seen === null ? null : Number(row.last_seen),
  clientIp: row.client_ip,
  userAgent: row.user_agent,
});

function sessionStore(pool: pg.Pool): SessionStore {
  return {
    create: (s, keep) =>
      transaction(pool, async (client) => {
        // contract §9: the user's row lock serialises that user's logins, so two at once cannot both
        // count 100 under READ COMMITTED and leave 101. The user row exists (the foreign key).
        // Through query(), as every statement here: it maps failures the same way.
        await query(
          client,
          'SELECT 1 FROM users WHERE username = $1 FOR UPDATE',
          [s.username],
          'session-lock-user',
        );
        await query(
          client,
          'INSERT INTO sessions (id_hash, username, created_at, expires_at, client_ip, user_agent) VALUES ($1, $2, $3, $4, $5, $6)',
          [s.idHash, s.username, s.createdAt, s.expiresAt, s.clientIp, s.userAgent],
          'session-create',
        );
        const evicted = await query(
          client,
          `DELETE FROM sessions WHERE id_hash IN (
             SELECT id_hash FROM sessions WHERE username = $1 AND expires_at > $2 AND id_hash <> $3
             ORDER BY created_at DESC, id_hash DESC OFFSET $4)`,
          [s.username, s.createdAt, s.idHash, Math.max(0, keep - 1)],
          'session-evict',
        );
        return changed(evicted);
      }),
    list: async (username, now) =>
      (
        await query<SessionRow>(
          pool,
          'SELECT id_hash, created_at, expires_at, last_seen, client_ip, user_agent FROM sessions WHERE username = $1 AND expires_at > $2',
          [username, now],
          'session-list',
        )
      ).rows.map(storedSession),
    touch: async (sightings) => {
      if (sightings.length === 0) return;
      // One statement for the whole batch; an id deleted meanwhile matches nothing.
      await query(
        pool,
        `UPDATE sessions SET last_seen = v.at FROM unnest($1::bytea[], $2::bigint[]) AS v(h, at)
          WHERE id_hash = v.h AND coalesce(last_seen, 0) < v.at`,
        [sightings.map((s) => s.idHash), sightings.map((s) => s.at)],
        'session-touch',
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
    usernames: sqlUsernameMaintenance(driver),
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
