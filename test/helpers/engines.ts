// The engines under a Stores, for what a test does to the data behind the service's back (as an
// operator's SQL shell or redis-cli would) or reads to prove what is stored.
import type { DatabaseSync } from 'node:sqlite';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { Stores } from '../../src/store/types.ts';

/** The SQLite connection of `stores` (which must be on SQLite). */
export function sqliteDb(stores: Pick<Stores, 'engine'>): DatabaseSync {
  const { engine } = stores;
  if (engine.database !== 'sqlite') throw new Error('not a SQLite store');
  return engine.db;
}

/** The PostgreSQL pool of `stores` (which must be on PostgreSQL). */
export function pgPool(stores: Pick<Stores, 'engine'>): pg.Pool {
  const { engine } = stores;
  if (engine.database !== 'postgres') throw new Error('not a PostgreSQL store');
  return engine.pool;
}

/** The Redis client of `stores` (which must keep sessions in Redis). */
export function redisClient(stores: Pick<Stores, 'engine'>): Redis {
  const { redis } = stores.engine;
  if (redis === null) throw new Error('no Redis behind these stores');
  return redis;
}
