// Opens the stores the options name (contract §6): SQLite or PostgreSQL for everything, or with
// sessions and throttle counters moved to Redis while groups, users and the secret key stay in the
// database. PostgreSQL and Redis clients are loaded only when named (they cost ~10 MB of memory).
// A serving process's memories answer through one freshness gate (freshness/gate.ts), whichever
// stores hold them.
import { existsSync } from 'node:fs';
import { answerWindows, type CatchUpSource, freshnessGate } from './freshness/gate.ts';
import { type OpenOptions, type StoreOptions, storeTls } from './options.ts';
import type { RedisStores } from './redis/store.ts';
import type { DatabaseStores } from './sql/stores.ts';
import { openSqliteDatabase } from './sqlite/driver.ts';
import { migrateSqlite } from './sqlite/schema.ts';
import { openSqliteStores } from './sqlite/store.ts';
import type { Memory, Stores } from './types.ts';

type OpenDatabaseOptions = OpenOptions & {
  readonly existing?: boolean;
  readonly windows?: ReturnType<typeof answerWindows>;
};

/**
 * The database's stores alone (sessions too, unless `options.sessions` moves them), migrated unless
 * told not to. Null for a SQLite file that does not exist when `existing` is asked (nothing is created).
 */
export async function openDatabase(
  options: StoreOptions,
  open: OpenDatabaseOptions = {},
): Promise<DatabaseStores | null> {
  const tls = storeTls(options);
  const { database } = options;
  // Sessions elsewhere (Redis): their memory, if any, is not the database's.
  const memory =
    open.memory === undefined || options.sessions === null ? open.memory : { ...open.memory, sessions: null };
  if (database.kind === 'sqlite') {
    if (open.existing === true && (database.path === ':memory:' || !existsSync(database.path))) return null;
    const opened = openSqliteStores(database.path, {
      busyTimeoutMs: database.busyTimeoutMs,
      ...(open.migrate === undefined ? {} : { migrate: open.migrate }),
      ...(memory === undefined ? {} : { memory }),
      ...(open.windows === undefined ? {} : { windows: open.windows }),
    });
    return { ...opened, tls };
  }
  const { openPostgresStores } = await import('./postgres/store.ts');
  const { postgresConnection } = await import('./postgres/driver.ts');
  const opened = await openPostgresStores(postgresConnection(database.target, database.transactionPooler), {
    ...(open.migrate === undefined ? {} : { migrate: open.migrate }),
    onError: (err) => open.onError?.('database', err),
    ...(memory === undefined ? {} : { memory }),
    ...(open.windows === undefined ? {} : { windows: open.windows }),
  });
  return { ...opened, tls };
}

/** The stores `options` name, migrated (unless told not to) and ready. */
export async function openStores(options: StoreOptions, open: OpenOptions = {}): Promise<Stores> {
  const windows = answerWindows();
  const database = (await openDatabase(options, { ...open, windows }))!;
  if (options.sessions === null) return database;
  const sessionMemory = open.memory?.sessions ?? null;
  let redis: RedisStores;
  try {
    const { openRedisStores } = await import('./redis/store.ts');
    redis = await openRedisStores(options.sessions.target, {
      keyPrefix: options.sessions.keyPrefix,
      onError: (err) => open.onError?.('sessions', err),
      ...(sessionMemory === null
        ? {}
        : { memory: { capacity: sessionMemory.capacity, window: windows.sessions } }),
      ...(open.onKeyEvents === undefined ? {} : { onKeyEvents: open.onKeyEvents }),
    });
  } catch (err) {
    await database.close();
    throw err;
  }
  const sources: Partial<Record<Memory, CatchUpSource>> = { ...database.catchUpSources };
  if (redis.memory !== null) sources.sessions = { rounds: redis.memory.rounds };
  return {
    ...database,
    sessions: redis.sessions,
    throttle: redis.throttle,
    flows: redis.flows,
    memory: { sessions: redis.memory?.answers ?? null, groups: database.memory.groups },
    freshness: freshnessGate(sources, windows),
    engine: { ...database.engine, redis: redis.client },
    ping: async () => {
      await Promise.all([database.ping(), redis.ping()]);
    },
    close: async () => {
      await Promise.allSettled([database.close(), redis.close()]);
    },
  };
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
