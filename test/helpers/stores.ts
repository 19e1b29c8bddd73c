// The one way a suite runs on every store: STORES lists every store combination the service can be
// given (SQLite, PostgreSQL, PostgreSQL through PgBouncer, and Redis sessions over each), and
// describeEachStore(name, (store) => …) runs the suite once on each. A suite whose assertions do not
// depend on what a store does (HTTP mechanics: headers, CORS, CSRF, cookies, body parsing) runs once,
// on the SQLite that startTestApp uses when a test names no store. Each combination makes a fresh,
// empty database (and key prefix) on the harness servers, gives its settings as environment
// variables (what startTestApp, a CLI run or a cluster takes), opens it, empties it between tests,
// dumps it raw (to prove what is and is not stored) and drops it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe } from 'node:test';
import type { Redis } from 'ioredis';
import { SERVING_MEMORY } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { openStores } from '../../src/store/open.ts';
import type { Stores } from '../../src/store/types.ts';
import { pgPool, redisClient, sqliteDb } from './engines.ts';
import { startPgBouncer } from './pgbouncer.ts';
import { startPostgres, type TestPostgres } from './postgres.ts';
import { startRedis } from './redis.ts';

export type StoreKind = 'sqlite' | 'postgres' | 'redis' | 'redis-postgres' | 'pgbouncer' | 'redis-pgbouncer';

export interface TestStore {
  readonly kind: StoreKind;
  /** The name the test output shows, e.g. `Redis sessions over PostgreSQL`. */
  readonly name: string;
  /** A fresh, empty database (and key prefix) of this kind on the harness servers. */
  create(): Promise<StoreData>;
}

export interface StoreData {
  /** The settings that reach it: DATABASE_URL, and SESSION_STORE, REDIS_KEY_PREFIX, … as needed. */
  readonly env: Readonly<Record<string, string>>;
  /** Opens the stores (migrated); every call opens the same data. */
  open(): Promise<Stores>;
  /** Deletes every row and key the stores hold, except the secret key. */
  reset(stores: Stores): Promise<void>;
  /** Everything the session and throttle stores keep, as text (ids and hashes as hex). */
  dump(stores: Stores): Promise<string>;
  /** Drops the database and the keys. */
  drop(): Promise<void>;
}

const SQL_TABLES = [
  'oidc_flows',
  'sessions',
  'throttle_failures',
  'throttle_pending',
  'known_clients',
  'memberships',
  'groups',
  // contract §12: they name users.
  'passkeys',
  'passkey_users',
  'users',
  'sync_leases',
];
/** The tables of the session, throttle and flow stores, dumped to prove what is and is not kept. */
const DUMPED_TABLES = ['sessions', 'throttle_failures', 'throttle_pending', 'known_clients', 'oidc_flows'];

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
  // The sessions' deletion log is not dumped, as SQLite's session_deletions is not: it holds the hashes
  // of deleted sessions for a while, by design (redis/session-log.ts).
  const log = [`${prefix}session-log`, `${prefix}session-log-state`];
  for (const key of (await redisKeys(client, prefix)).filter((name) => !log.includes(name))) {
    const type = await client.type(key);
    out[key] =
      type === 'hash'
        ? await client.hgetall(key)
        : type === 'zset'
          ? await client.zrangebyscore(key, '-inf', '+inf', 'WITHSCORES')
          : type === 'list'
            ? await client.lrange(key, 0, -1)
            : (await client.getBuffer(key))?.toString('hex');
  }
  return JSON.stringify(out);
}

/** The database part: a SQLite file or a PostgreSQL database, with its own reset and dump. */
interface Database {
  readonly env: Record<string, string>;
  reset(stores: Stores): Promise<void>;
  dump(stores: Stores): Promise<string>;
  drop(): Promise<void>;
}

async function sqliteDatabase(): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), 'clubhouse-store-'));
  return {
    env: { DATABASE_URL: `sqlite:${join(dir, 'clubhouse.db')}` },
    async reset(stores) {
      const db = sqliteDb(stores);
      for (const table of SQL_TABLES) db.exec(`DELETE FROM ${table}`);
    },
    async dump(stores) {
      const db = sqliteDb(stores);
      return rowsJson(DUMPED_TABLES.map((table) => db.prepare(`SELECT * FROM ${table}`).all()));
    },
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function postgresDatabase(server: TestPostgres, pooler: boolean): Promise<Database> {
  const database = await server.createDatabase();
  const env: Record<string, string> = { DATABASE_URL: database.url };
  if (pooler) env['DATABASE_TRANSACTION_POOLER'] = 'true';
  return {
    env,
    async reset(stores) {
      await pgPool(stores).query(`TRUNCATE ${SQL_TABLES.join(', ')}`);
    },
    async dump(stores) {
      const pool = pgPool(stores);
      const tables = [];
      for (const table of DUMPED_TABLES) tables.push((await pool.query(`SELECT * FROM ${table}`)).rows);
      return rowsJson(tables);
    },
    drop: () => database.drop(),
  };
}

// One handle per test process: the machine's servers when they answer, else private ones started
// once (child.ts stops them when the process exits). Started on first use only.
let postgres: Promise<TestPostgres> | undefined;
let pgbouncer: Promise<TestPostgres> | undefined;
const sharedPostgres = () => (postgres ??= startPostgres());
const sharedPgBouncer = () => (pgbouncer ??= sharedPostgres().then(startPgBouncer));

function store(
  kind: StoreKind,
  name: string,
  database: () => Promise<Database>,
  redisSessions: boolean,
): TestStore {
  return {
    kind,
    name,
    async create() {
      const made = await database();
      const env = { ...made.env };
      let prefix = '';
      let dropKeys = async () => {};
      if (redisSessions) {
        const redis = await startRedis().catch(async (err: unknown) => {
          await made.drop();
          throw err;
        });
        prefix = redis.keyPrefix();
        env['SESSION_STORE'] = redis.url;
        env['REDIS_KEY_PREFIX'] = prefix;
        dropKeys = () => redis.stop();
      }
      return {
        env,
        // With the memories, as the server opens them: the suites run on the stores it serves from.
        open: () => openStores(loadConfig(env).store, { memory: SERVING_MEMORY }),
        async reset(stores) {
          await made.reset(stores);
          if (redisSessions) {
            const client = redisClient(stores);
            const keys = await redisKeys(client, prefix);
            if (keys.length > 0) await client.unlink(...keys);
          }
        },
        dump: (stores) => (redisSessions ? dumpRedis(redisClient(stores), prefix) : made.dump(stores)),
        async drop() {
          await dropKeys();
          await made.drop();
        },
      };
    },
  };
}

const viaPostgres = async () => postgresDatabase(await sharedPostgres(), false);
const viaPgBouncer = async () => postgresDatabase(await sharedPgBouncer(), true);

/** Every store combination: describeEachStore runs a suite on each. */
export const STORES: readonly TestStore[] = [
  store('sqlite', 'SQLite', sqliteDatabase, false),
  store('postgres', 'PostgreSQL', viaPostgres, false),
  store('redis', 'Redis sessions over SQLite', sqliteDatabase, true),
  store('redis-postgres', 'Redis sessions over PostgreSQL', viaPostgres, true),
  // PgBouncer in transaction mode, docs/operations.md's recipe for many instances.
  store('pgbouncer', 'PostgreSQL through PgBouncer', viaPgBouncer, false),
  store('redis-pgbouncer', 'Redis sessions over PostgreSQL through PgBouncer', viaPgBouncer, true),
];

/** The store of this kind (for a test that needs one store by its nature, and says why). */
export function storeOf(kind: StoreKind): TestStore {
  const found = STORES.find((candidate) => candidate.kind === kind);
  if (found === undefined) throw new Error(`no store of kind ${kind}`);
  return found;
}

/** SQLite: what startTestApp uses when a test names no store. */
export const SQLITE: TestStore = storeOf('sqlite');

export interface EachStoreOptions {
  /**
   * Run the stores side by side (their data is separate): for a long suite whose time goes waiting
   * on the servers. Nothing in it may then depend on timing.
   */
  readonly concurrency?: boolean;
}

/**
 * `describe(name [store])` once for every store of STORES; the body gets the store to run on. With
 * `concurrency`, the describes run side by side inside one `describe(name)`.
 */
export function describeEachStore(
  name: string,
  body: (store: TestStore) => void,
  options: EachStoreOptions = {},
): void {
  if (options.concurrency !== true) {
    for (const each of STORES) describe(`${name} [${each.name}]`, () => body(each));
    return;
  }
  describe(name, { concurrency: true }, () => {
    for (const each of STORES) describe(`${name} [${each.name}]`, () => body(each));
  });
}

/** A --test-name-pattern (or --test-skip-pattern) for the describes describeEachStore makes for `stores`. */
export function storeDescribePattern(stores: readonly TestStore[]): string {
  const names = stores.map((each) => each.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return `\\[(?:${names.join('|')})\\]$`;
}
