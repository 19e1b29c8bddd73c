// Opens the stores the options name (contract §6): SQLite or PostgreSQL for everything, or with
// sessions and throttle counters moved to Redis while groups, users and the secret key stay in the
// database. PostgreSQL and Redis clients are loaded only when named (they cost ~10 MB of memory).
import { existsSync } from 'node:fs';
import { type OpenOptions, type StoreOptions, storeTls } from './options.ts';
import type { RedisStores } from './redis/store.ts';
import type { SharedLook } from './shared-look.ts';
import { openSqliteDatabase } from './sqlite/driver.ts';
import { migrateSqlite } from './sqlite/schema.ts';
import { openSqliteStores } from './sqlite/store.ts';
import type { Stores } from './types.ts';

/**
 * The database's stores alone (sessions too, unless `options.sessions` moves them), migrated unless
 * told not to. Null for a SQLite file that does not exist when `existing` is asked (nothing is created).
 */
export async function openDatabase(
  options: StoreOptions,
  open: OpenOptions & { readonly existing?: boolean } = {},
): Promise<Stores | null> {
  const tls = storeTls(options);
  const { database } = options;
  if (database.kind === 'sqlite') {
    if (open.existing === true && (database.path === ':memory:' || !existsSync(database.path))) return null;
    const opened = openSqliteStores(database.path, {
      busyTimeoutMs: database.busyTimeoutMs,
      migrate: open.migrate,
      groupJson: open.groupJson,
    });
    return Object.assign(opened, { tls });
  }
  const { openPostgresStores } = await import('./postgres/store.ts');
  const { postgresConnection } = await import('./postgres/driver.ts');
  const opened = await openPostgresStores(postgresConnection(database.target, database.transactionPooler), {
    migrate: open.migrate,
    onError: (err) => open.onError?.('database', err),
    groupJson: open.groupJson,
    sessionsElsewhere: options.sessions !== null,
  });
  return Object.assign(opened, { tls });
}

/** The stores `options` name, migrated (unless told not to) and ready. */
export async function openStores(options: StoreOptions, open: OpenOptions = {}): Promise<Stores> {
  const database = (await openDatabase(options, open))!;
  if (options.sessions === null) return database;
  // PostgreSQL's shared looks (with the group cache): the sessions in Redis join them (issue 24).
  const looks = (database as { readonly sharedLooks?: { readonly sessions: SharedLook } }).sharedLooks;
  let redis: RedisStores;
  try {
    const { openRedisStores } = await import('./redis/store.ts');
    redis = await openRedisStores(options.sessions.target, {
      keyPrefix: options.sessions.keyPrefix,
      onError: (err) => open.onError?.('sessions', err),
      ...(looks === undefined ? {} : { look: looks.sessions }),
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
    flows: redis.flows,
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
export async function migrateStores(options: Pick<StoreOptions, 'database'>): Promise<number[]> {
  const { database } = options;
  if (database.kind === 'postgres') {
    const { migratePostgres } = await import('./postgres/schema.ts');
    const { postgresConnection } = await import('./postgres/driver.ts');
    return migratePostgres(postgresConnection(database.target, database.transactionPooler));
  }
  const db = openSqliteDatabase(database.path);
  try {
    return migrateSqlite(db);
  } finally {
    db.close();
  }
}
