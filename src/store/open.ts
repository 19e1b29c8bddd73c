// Opens the stores the settings name (contract §6): DATABASE_URL picks SQLite or PostgreSQL for
// everything; SESSION_STORE=redis://… moves sessions and throttle counters to Redis, while groups,
// users and the secret key stay in the database.
import type { Config } from '../config.ts';
import type { RedisStores } from './redis.ts';
import { migrateSqlite, openSqliteDatabase, openSqliteStores, sqlitePath } from './sqlite.ts';
import type { Stores } from './types.ts';

export type StoreSettings = Pick<
  Config,
  'databaseUrl' | 'sessionStore' | 'sqliteBusyTimeoutMs' | 'redisKeyPrefix'
>;

export interface OpenOptions {
  /** Apply pending migrations first (default true; a cluster's workers leave it to the primary). */
  readonly migrate?: boolean;
  /** Hears of background connection errors (the stores reconnect by themselves). */
  readonly onError?: (store: 'database' | 'sessions', err: Error) => void;
}

const isPostgres = (url: string) => /^postgres(ql)?:\/\//.test(url);

/** The stores for these settings, migrated (unless told not to) and ready. */
export async function openStores(config: StoreSettings, options: OpenOptions = {}): Promise<Stores> {
  // PostgreSQL and Redis clients are loaded only when configured (they cost ~10 MB of memory).
  const database = isPostgres(config.databaseUrl)
    ? await (await import('./postgres.ts')).openPostgresStores(config.databaseUrl, {
        migrate: options.migrate,
        onError: (err) => options.onError?.('database', err),
      })
    : openSqliteStores(sqlitePath(config.databaseUrl), config.sqliteBusyTimeoutMs, options.migrate);
  if (config.sessionStore === null) return database;
  let redis: RedisStores;
  try {
    const { openRedisStores } = await import('./redis.ts');
    redis = await openRedisStores(config.sessionStore, {
      keyPrefix: config.redisKeyPrefix,
      onError: (err) => options.onError?.('sessions', err),
    });
  } catch (err) {
    await database.close();
    throw err;
  }
  const combined: Stores & { readonly redis: RedisStores['client'] } = {
    ...database,
    redis: redis.client,
    sessions: redis.sessions,
    throttle: redis.throttle,
    ping: async () => {
      await Promise.all([database.ping(), redis.ping()]);
    },
    close: async () => {
      await Promise.allSettled([database.close(), redis.close()]);
    },
  };
  return combined;
}

/** Applies pending migrations (`clubhouse migrate`); returns the versions applied. */
export async function migrateStores(config: Pick<Config, 'databaseUrl'>): Promise<number[]> {
  if (isPostgres(config.databaseUrl))
    return (await import('./postgres-pool.ts')).migratePostgres(config.databaseUrl);
  const db = openSqliteDatabase(sqlitePath(config.databaseUrl));
  try {
    return migrateSqlite(db);
  } finally {
    db.close();
  }
}
