import type pg from 'pg';
import { type AnswerWindows, answerWindows, CatchUpRounds } from '../freshness/gate.ts';
import type { MemoryOptions } from '../options.ts';
import { GROUP_QUERIES } from '../sql/groups.ts';
import { type DatabaseStores, sqlStores } from '../sql/stores.ts';
import type { TlsState } from '../types.ts';
import { PostgresCatchUp } from './catch-up.ts';
import { createPool, type PostgresConnection, postgresConnection, postgresDriver, query } from './driver.ts';
import { postgresGroupMemory } from './groups.ts';
import { migratePostgres } from './schema.ts';
import { postgresSessionMemory } from './sessions.ts';

/**
 * The SQL of the two group endpoints as PostgreSQL runs them (test/store/postgres.test.ts, plans).
 */
export const POSTGRES_GROUP_QUERIES = GROUP_QUERIES;

export interface PostgresOptions {
  /** Apply pending migrations first (default true; a cluster's workers leave it to the primary). */
  readonly migrate?: boolean;
  /** Hears of idle connections that broke (logged; the pool replaces them). */
  readonly onError?: (err: Error) => void;
  /** What to keep in memory; absent: nothing. */
  readonly memory?: MemoryOptions;
  /** The memories' answer windows (open.ts shares them with a Redis session store); made when absent. */
  readonly windows?: AnswerWindows;
}

/** Opens the PostgreSQL stores, migrating first unless told not to. */
export async function openPostgresStores(
  target: string | PostgresConnection,
  options: PostgresOptions = {},
): Promise<DatabaseStores> {
  const connection = typeof target === 'string' ? postgresConnection(target) : target;
  if (options.migrate !== false) await migratePostgres(connection);
  const pool = createPool(connection, options.onError);
  await refuseUnsupportedStartup(pool);
  const driver = postgresDriver(pool);
  const windows = options.windows ?? answerWindows();
  const { sessions: sessionMemory = null, groups: groupMemory = null } = options.memory ?? {};
  // Every memory on this database catches up in one statement, shared by the requests of a turn.
  const rounds = new CatchUpRounds({ batch: true });
  const catchUp = new PostgresCatchUp(pool, rounds);
  const sessions =
    sessionMemory !== null
      ? postgresSessionMemory(pool, driver, catchUp, windows.sessions, sessionMemory.capacity)
      : null;
  const groups =
    groupMemory === null
      ? null
      : postgresGroupMemory(pool, driver, catchUp, windows.groups, groupMemory.json, groupMemory.limits);
  return sqlStores(
    driver,
    { sessions, groups, rounds, windows },
    {
      engine: { database: 'postgres', pool, redis: null },
      ping: async () => {
        await query(pool, 'SELECT 1');
      },
      tls: { database: tlsState(connection), sessions: tlsState(connection) },
      close: async () => {
        if (!pool.ended) await pool.end();
      },
    },
  );
}

/** How the pool reaches the server (sslmode=require asks for TLS without checks, by name). */
function tlsState(connection: PostgresConnection): TlsState {
  if (connection.ssl === false) return 'off';
  return connection.ssl.rejectUnauthorized === false ? 'not verified' : 'verified';
}

/**
 * PgBouncer in transaction mode refuses the pool's timeouts as startup parameters and would then
 * answer every request 503: say so at start-up instead, with the setting that fixes it.
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
