// Opens the stores the settings name (contract §6): DATABASE_URL picks SQLite or PostgreSQL for
// everything; SESSION_STORE=redis://… (rediss://, redis-sentinel://) moves sessions and throttle
// counters to Redis, while groups, users and the secret key stay in the database.
import { existsSync } from 'node:fs';
import { type Config, ConfigError } from '../config/config.ts';
import type { PostgresConnection } from './postgres/pool.ts';
import { type PostgresTls, parsePostgresTls, postgresTlsState } from './postgres/url.ts';
import type { RedisStores } from './redis/store.ts';
import { parseRedisTarget, type RedisTarget, redisTlsState } from './redis/url.ts';
import { migrateSqlite, openSqliteDatabase, openSqliteStores, sqlitePath } from './sqlite/store.ts';
import type { Stores, TlsState } from './types.ts';

export type StoreSettings = Pick<
  Config,
  'databaseUrl' | 'sessionStore' | 'sqliteBusyTimeoutMs' | 'redisKeyPrefix'
> &
  Partial<Pick<Config, 'databaseCaFile' | 'databaseTransactionPooler' | 'redisCaFile'>>;

export interface OpenOptions {
  /** Apply pending migrations first (default true; a cluster's workers leave it to the primary). */
  readonly migrate?: boolean;
  /** Hears of background connection errors (the stores reconnect by themselves). */
  readonly onError?: (store: 'database' | 'sessions', err: Error) => void;
}

const isPostgres = (url: string) => /^postgres(ql)?:\/\//.test(url);

// loadConfig has checked these; a caller passing hand-made settings gets the same error.
function postgresTls(config: Pick<StoreSettings, 'databaseUrl' | 'databaseCaFile'>): PostgresTls {
  const result = parsePostgresTls(config.databaseUrl, config.databaseCaFile ?? null);
  if (!result.ok) throw new ConfigError(result.variable, result.message);
  return result.tls;
}

function redisTarget(sessionStore: string, config: Pick<StoreSettings, 'redisCaFile'>): RedisTarget {
  const result = parseRedisTarget(sessionStore, config.redisCaFile ?? null);
  if (!result.ok) throw new ConfigError(result.variable, result.message);
  return result.target;
}

async function connection(config: StoreSettings): Promise<PostgresConnection> {
  const { postgresConnection } = await import('./postgres/pool.ts');
  return postgresConnection(postgresTls(config), config.databaseTransactionPooler ?? false);
}

/** The TLS state of each store these settings connect to (issue 17: /readyz, config check). */
export function storeTls(config: StoreSettings): { database: TlsState; sessions: TlsState } {
  const database = isPostgres(config.databaseUrl) ? postgresTlsState(postgresTls(config)) : 'local';
  const sessions =
    config.sessionStore === null ? database : redisTlsState(redisTarget(config.sessionStore, config));
  return { database, sessions };
}

/**
 * The database's stores alone (sessions too, unless SESSION_STORE moves them), migrated unless told
 * not to. Null for a SQLite file that does not exist when `existing` is asked (nothing is created).
 */
export async function openDatabase(
  config: StoreSettings,
  options: OpenOptions & { readonly existing?: boolean } = {},
): Promise<Stores | null> {
  const tls = storeTls(config);
  if (options.existing === true && !isPostgres(config.databaseUrl)) {
    const path = sqlitePath(config.databaseUrl);
    if (path === ':memory:' || !existsSync(path)) return null;
  }
  // PostgreSQL and Redis clients are loaded only when configured (they cost ~10 MB of memory).
  const opened = isPostgres(config.databaseUrl)
    ? await (await import('./postgres/store.ts')).openPostgresStores(await connection(config), {
        migrate: options.migrate,
        onError: (err) => options.onError?.('database', err),
      })
    : openSqliteStores(sqlitePath(config.databaseUrl), config.sqliteBusyTimeoutMs, options.migrate);
  return Object.assign(opened, { tls });
}

/** The stores for these settings, migrated (unless told not to) and ready. */
export async function openStores(config: StoreSettings, options: OpenOptions = {}): Promise<Stores> {
  const tls = storeTls(config);
  const database = (await openDatabase(config, options))!;
  if (config.sessionStore === null) return database;
  let redis: RedisStores;
  try {
    const { openRedisStores } = await import('./redis/store.ts');
    redis = await openRedisStores(redisTarget(config.sessionStore, config), {
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
    tls,
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
export async function migrateStores(
  config: Pick<StoreSettings, 'databaseUrl' | 'databaseCaFile' | 'databaseTransactionPooler'>,
): Promise<number[]> {
  if (isPostgres(config.databaseUrl)) {
    const { migratePostgres, postgresConnection } = await import('./postgres/pool.ts');
    const pooler = config.databaseTransactionPooler ?? false;
    return migratePostgres(postgresConnection(postgresTls(config), pooler));
  }
  const db = openSqliteDatabase(sqlitePath(config.databaseUrl));
  try {
    return migrateSqlite(db);
  } finally {
    db.close();
  }
}
