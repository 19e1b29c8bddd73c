// The store combinations the contract suite runs against: SQLite, PostgreSQL, and Redis sessions
// over each. Every backend can be opened again on the same data (secretKey across opens), emptied
// between tests, dumped raw (to prove what is and is not stored), and removed afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { openStores, type StoreSettings } from '../../src/store/open.ts';
import type { Stores } from '../../src/store/types.ts';
import type { TestPostgres } from './postgres.ts';
import type { TestRedis } from './redis.ts';

export interface StoreBackend {
  readonly name: string;
  /** Makes the database (and key prefix); call once before open(). */
  setup(): Promise<void>;
  /** Opens the stores; every call opens the same data. */
  open(): Promise<Stores>;
  /** Deletes every row and key the stores hold, except the secret key. */
  reset(stores: Stores): Promise<void>;
  /** Everything the session and throttle stores keep, as text (ids and hashes as hex). */
  dump(stores: Stores): Promise<string>;
  /** Drops the database and the keys. */
  cleanup(): Promise<void>;
}

const SQLITE_TABLES = [
  'sessions',
  'throttle_failures',
  'throttle_pending',
  'known_clients',
  'memberships',
  'groups',
  'users',
];
/** The tables of the session and throttle stores, dumped to prove what is and is not kept. */
const DUMPED_TABLES = ['sessions', 'throttle_failures', 'throttle_pending', 'known_clients'];

/** Rows as JSON with byte strings in hex (Buffer's own toJSON would hide them from a replacer). */
function rowsJson(tables: Record<string, unknown>[][]): string {
  return JSON.stringify(
    tables.map((rows) =>
      rows.map((row) =>
        Object.fromEntries(
          Object.entries(row).map(([key, value]) => [
            key,
            value instanceof Uint8Array ? Buffer.from(value).toString('hex') : value,
          ]),
        ),
      ),
    ),
  );
}

function sqliteDb(stores: Stores): DatabaseSync {
  return (stores as unknown as { db: DatabaseSync }).db;
}

function pgPool(stores: Stores): pg.Pool {
  return (stores as unknown as { pool: pg.Pool }).pool;
}

function redisClient(stores: Stores): Redis {
  return (stores as unknown as { redis: Redis }).redis;
}

async function redisKeys(client: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    // Harness prefixes are hex: no glob characters to escape.
    const [next, found] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    keys.push(...found);
    cursor = next;
  } while (cursor !== '0');
  return keys.sort();
}

async function dumpRedis(client: Redis, prefix: string): Promise<string> {
  const out: Record<string, unknown> = {};
  for (const key of await redisKeys(client, prefix)) {
    const type = await client.type(key);
    out[key] =
      type === 'hash'
        ? await client.hgetall(key)
        : type === 'zset'
          ? await client.zrangebyscore(key, '-inf', '+inf', 'WITHSCORES')
          : await client.get(key);
  }
  return JSON.stringify(out);
}

interface Database {
  readonly settings: Pick<StoreSettings, 'databaseUrl'>;
  setup(): Promise<void>;
  reset(stores: Stores): Promise<void>;
  dump(stores: Stores): Promise<string>;
  cleanup(): Promise<void>;
}

function sqliteDatabase(): Database {
  let dir = '';
  const settings = { databaseUrl: '' };
  return {
    settings,
    async setup() {
      dir = mkdtempSync(join(tmpdir(), 'clubhouse-contract-'));
      settings.databaseUrl = `sqlite:${join(dir, 'contract.db')}`;
    },
    async reset(stores) {
      const db = sqliteDb(stores);
      for (const table of SQLITE_TABLES) db.exec(`DELETE FROM ${table}`);
    },
    async dump(stores) {
      const db = sqliteDb(stores);
      return rowsJson(DUMPED_TABLES.map((table) => db.prepare(`SELECT * FROM ${table}`).all()));
    },
    async cleanup() {
      if (dir !== '') rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresDatabase(server: TestPostgres): Database {
  let drop: () => Promise<void> = async () => {};
  const settings = { databaseUrl: '' };
  return {
    settings,
    async setup() {
      const database = await server.createDatabase();
      settings.databaseUrl = database.url;
      drop = database.drop;
    },
    async reset(stores) {
      await pgPool(stores).query(`TRUNCATE ${SQLITE_TABLES.join(', ')}`);
    },
    async dump(stores) {
      const pool = pgPool(stores);
      const tables = [];
      for (const table of DUMPED_TABLES) {
        tables.push((await pool.query(`SELECT * FROM ${table}`)).rows);
      }
      return rowsJson(tables);
    },
    cleanup: () => drop(),
  };
}

function backend(
  name: string,
  database: Database,
  redis?: TestRedis,
  extra: Partial<StoreSettings> = {},
): StoreBackend {
  let prefix = '';
  const settings = (): StoreSettings => ({
    ...extra,
    databaseUrl: database.settings.databaseUrl,
    sqliteBusyTimeoutMs: 5000,
    sessionStore: redis === undefined ? null : redis.url,
    redisKeyPrefix: prefix,
  });
  return {
    name,
    async setup() {
      await database.setup();
      if (redis !== undefined) prefix = redis.keyPrefix();
    },
    open: () => openStores(settings()),
    async reset(stores) {
      await database.reset(stores);
      if (redis !== undefined) {
        const client = redisClient(stores);
        const keys = await redisKeys(client, prefix);
        if (keys.length > 0) await client.unlink(...keys);
      }
    },
    dump: (stores) => (redis === undefined ? database.dump(stores) : dumpRedis(redisClient(stores), prefix)),
    cleanup: () => database.cleanup(),
  };
}

/** Every combination: SQLite, PostgreSQL, Redis over SQLite, Redis over PostgreSQL. */
export function storeBackends(postgres: TestPostgres, redis: TestRedis): StoreBackend[] {
  return [
    backend('SQLite', sqliteDatabase()),
    backend('PostgreSQL', postgresDatabase(postgres)),
    backend('Redis sessions over SQLite', sqliteDatabase(), redis),
    backend('Redis sessions over PostgreSQL', postgresDatabase(postgres), redis),
  ];
}

/** PostgreSQL, and Redis sessions over it, with the database reached through PgBouncer (issue 17). */
export function pgbouncerBackends(pgbouncer: TestPostgres, redis: TestRedis): StoreBackend[] {
  const pooled = { databaseTransactionPooler: true };
  return [
    backend('PostgreSQL through PgBouncer', postgresDatabase(pgbouncer), undefined, pooled),
    backend('Redis sessions over PostgreSQL through PgBouncer', postgresDatabase(pgbouncer), redis, pooled),
  ];
}
