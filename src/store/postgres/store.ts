// The PostgreSQL store (DATABASE_URL=postgres://…): every store interface on one pool, shared by
// any number of instances. Users, groups, the import, the secret, sessions and throttle counters are
// the shared SQL layer (sql/) over driver.ts; times are ms in BIGINT, which pg returns as strings
// (sql/rows.ts reads them).
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { GroupJson } from '../group-types.ts';
import { SharedLook } from '../shared-look.ts';
import { sqlFlowStore } from '../sql/flows.ts';
import { sqlGroupSyncStore } from '../sql/group-sync.ts';
import { GROUP_QUERIES, sqlGroupStore } from '../sql/groups.ts';
import { sqlSessionStore } from '../sql/sessions.ts';
import { sqlThrottleStore } from '../sql/throttle.ts';
import { sqlUsernameMaintenance } from '../sql/usernames.ts';
import { secretKey, sqlUserStore } from '../sql/users.ts';
import type { CachedRead, Stores } from '../types.ts';
import { createPool, type PostgresConnection, postgresConnection, postgresDriver, query } from './driver.ts';
import { cachedPostgresGroups } from './groups.ts';
import { PostgresLook } from './look.ts';
import { migratePostgres } from './schema.ts';
import { cachedPostgresSessions } from './sessions.ts';

/**
 * The SQL of the two group endpoints as PostgreSQL runs them (test/store/postgres.test.ts, plans).
 */
export const POSTGRES_GROUP_QUERIES = GROUP_QUERIES;

export interface PostgresOptions {
  /** Apply pending migrations first (default true; a cluster's workers leave it to the primary). */
  readonly migrate?: boolean;
  /** Hears of idle connections that broke (logged; the pool replaces them). */
  readonly onError?: (err: Error) => void;
  /** The group answers to keep in memory, made exact by a shared look (issue 24); absent: none. */
  readonly groupJson?: GroupJson;
  /** The sessions are kept elsewhere (Redis): not cached here, and no look at their log. */
  readonly sessionsElsewhere?: boolean;
}

/** Opens the PostgreSQL stores, migrating first unless told not to. */
export async function openPostgresStores(
  target: string | PostgresConnection,
  options: PostgresOptions = {},
): Promise<Stores & { readonly pool: pg.Pool; readonly sharedLooks?: Looks }> {
  const connection = typeof target === 'string' ? postgresConnection(target) : target;
  if (options.migrate !== false) await migratePostgres(connection);
  const pool = createPool(connection, options.onError);
  await refuseUnsupportedStartup(pool);
  const driver = postgresDriver(pool);
  // Issue 24: with the group answers kept in memory, every answer from memory waits for a shared look
  // at the caches it reads. Both caches on this database: one look, one statement for both (look.ts).
  // Sessions in Redis: a look of their own, which Redis's session cache joins.
  const looks =
    options.groupJson === undefined
      ? null
      : lookFor(options.sessionsElsewhere === true ? 'apart' : 'together');
  const lookQuery = looks === null ? null : new PostgresLook(pool, looks.groups);
  return {
    pool,
    ...(looks === null ? {} : lookStores(looks)),
    users: sqlUserStore(driver),
    usernames: sqlUsernameMaintenance(driver),
    groups:
      looks === null || options.groupJson === undefined
        ? sqlGroupStore(driver)
        : cachedPostgresGroups(pool, driver, looks.groups, lookQuery!, options.groupJson),
    groupSync: sqlGroupSyncStore(driver),
    sessions:
      looks === null || options.sessionsElsewhere === true
        ? sqlSessionStore(driver)
        : cachedPostgresSessions(pool, driver, looks.sessions, lookQuery!),
    throttle: sqlThrottleStore(driver),
    flows: sqlFlowStore(driver),
    secretKey: () => driver.run(secretKey(randomBytes(32))),
    ping: async () => {
      await query(pool, 'SELECT 1');
    },
    close: async () => {
      if (!pool.ended) await pool.end();
    },
  };
}

/** The shared look each cache waits for (a check waits for the sessions' alone). */
type Looks = Readonly<Record<CachedRead, SharedLook>>;

const BOTH: readonly CachedRead[] = ['sessions', 'groups'];

/** One look for both caches (both on this database), or one each (the sessions elsewhere). */
function lookFor(sessions: 'together' | 'apart'): Looks {
  const groups = new SharedLook();
  return { groups, sessions: sessions === 'together' ? groups : new SharedLook() };
}

/** The Stores members of the shared looks (kept for a session store in Redis to use the sessions'). */
function lookStores(looks: Looks) {
  return {
    sharedLooks: looks,
    look: (reads: readonly CachedRead[]): Promise<void> =>
      reads.length === 1 || (reads.length > 1 && looks.sessions === looks.groups)
        ? looks[reads[0]!].wait()
        : Promise.all(reads.map((read) => looks[read].wait())).then(() => {}),
    // Only the caches looked at answer: a reader that reads another gets nothing from memory there.
    // One look for all the reads (the usual case on every request): no closures to build.
    atOnce: <T>(work: () => T, reads: readonly CachedRead[] = BOTH): T => {
      const first = reads[0];
      if (first !== undefined && (reads.length === 1 || looks.sessions === looks.groups))
        return looks[first].atOnce(work);
      return reads.reduce<() => T>((inner, read) => () => looks[read].atOnce(inner), work)();
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
