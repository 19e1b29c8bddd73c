// What only PostgreSQL shows: migrations by several instances at once, the plans of the two group
// queries at scale, which failures count as an outage (503) and which do not, and the admin CLI
// against a PostgreSQL database (with sessions in Redis, too).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { runCli } from '../../src/cli/main.ts';
import { loadConfig } from '../../src/config/config.ts';
import { StoreUnavailableError } from '../../src/store/errors.ts';
import { openStores } from '../../src/store/open.ts';
import { isPostgresUnavailable, query } from '../../src/store/postgres/driver.ts';
import { migratePostgres } from '../../src/store/postgres/schema.ts';
import { POSTGRES_GROUP_QUERIES } from '../../src/store/postgres/store.ts';
import type { Stores } from '../../src/store/types.ts';
import { freePort } from '../helpers/ports.ts';
import { startPostgres, type TestDatabase } from '../helpers/postgres.ts';
import { startRedis } from '../helpers/redis.ts';

const postgres = await startPostgres();
const redis = await startRedis();
after(async () => {
  await postgres.stop();
  await redis.stop();
});

/** A fresh database, dropped after the test. */
async function database(t: { after(fn: () => Promise<void>): void }): Promise<TestDatabase> {
  const db = await postgres.createDatabase();
  t.after(() => db.drop());
  return db;
}

test('ten instances migrating one database at once apply each migration exactly once', async (t) => {
  const db = await database(t);
  const results = await Promise.all(Array.from({ length: 10 }, () => migratePostgres(db.url)));
  assert.deepEqual(
    results.filter((applied) => applied.length > 0),
    [[1, 2, 3, 4, 5, 6]],
  );
  assert.deepEqual(await migratePostgres(db.url), []);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT version, name FROM schema_migrations ORDER BY version');
    assert.deepEqual(rows, [
      { version: 1, name: 'users, sessions, throttle' },
      { version: 2, name: 'groups and memberships' },
      { version: 3, name: 'guesses in flight' },
      { version: 4, name: 'where sessions were started, and when last seen' },
      { version: 5, name: 'groups from the directory' },
      { version: 6, name: 'sign-ins at an identity provider in progress' },
    ]);
  } finally {
    await client.end();
  }
});

describe('the group queries use the primary keys (20 000 groups, 200 000 memberships)', () => {
  let db: TestDatabase;
  let client: pg.Client;
  before(async () => {
    db = await postgres.createDatabase();
    await migratePostgres(db.url);
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query(`
      INSERT INTO groups (id, name, type) SELECT i, 'group ' || i, i % 2 FROM generate_series(1, 20000) i;
      INSERT INTO users (username, created_at) SELECT 'user' || i, 0 FROM generate_series(1, 20000) i;
      INSERT INTO users (username, created_at) VALUES ('alice', 0);
      INSERT INTO memberships (username, group_id, status)
        SELECT 'user' || i, ((i * 37 + j * 4999) % 20000) + 1, (i + j) % 3
        FROM generate_series(1, 10000) i, generate_series(0, 19) j;
      INSERT INTO memberships (username, group_id, status)
        SELECT 'alice', ((k * 7919 + 4243) % 20000) + 1, k % 3 FROM generate_series(0, 19) k;
      ANALYZE;
    `);
  });
  after(async () => {
    await client.end();
    await db.drop();
  });

  /** Every node of an EXPLAIN (FORMAT JSON) plan, depth first. */
  function nodes(plan: Record<string, unknown>): Record<string, unknown>[] {
    const children = (plan['Plans'] as Record<string, unknown>[] | undefined) ?? [];
    return [plan, ...children.flatMap(nodes)];
  }

  async function planOf(name: string, sql: string, values: unknown[]) {
    await client.query(`PREPARE ${name} AS ${sql}`);
    const { rows } = await client.query(
      `EXPLAIN (FORMAT JSON) EXECUTE ${name}(${values.map((v) => (typeof v === 'string' ? `'${v}'` : v)).join(', ')})`,
    );
    const plan = nodes((rows[0]['QUERY PLAN'] as { Plan: Record<string, unknown> }[])[0]!.Plan);
    const shown = JSON.stringify(
      plan.map((n) => [n['Node Type'], n['Index Name']]),
      null,
      0,
    );
    return { plan, shown };
  }

  test('listForMember: memberships_pkey and groups_pkey, never a table scan; any Sort is of the caller’s rows', async () => {
    const { plan, shown } = await planOf('list_for_member', POSTGRES_GROUP_QUERIES.listForMember, ['alice']);
    const types = plan.map((n) => String(n['Node Type']));
    assert.ok(!types.includes('Seq Scan'), shown);
    const indexes = plan.map((n) => n['Index Name']).filter((name) => name !== undefined);
    assert.deepEqual(indexes.sort(), ['groups_pkey', 'memberships_pkey'], shown);
    // With a bitmap scan the planner sorts the few rows it found (alice has 20 memberships).
    for (const sort of plan.filter((n) => n['Node Type'] === 'Sort')) {
      assert.ok(Number(sort['Plan Rows']) <= 20, shown);
    }
  });

  test('detail: two primary-key lookups', async () => {
    const { plan, shown } = await planOf('group_detail', POSTGRES_GROUP_QUERIES.detail, ['alice', 4243 + 1]);
    const types = plan.map((n) => String(n['Node Type']));
    assert.ok(!types.includes('Seq Scan'), shown);
    const indexes = plan.map((n) => n['Index Name']).filter((name) => name !== undefined);
    assert.deepEqual(indexes.sort(), ['groups_pkey', 'memberships_pkey'], shown);
  });

  test('and they answer exactly', async () => {
    const stores = await openStores(loadConfig({ DATABASE_URL: db.url }).store);
    try {
      const expected = Array.from({ length: 20 }, (_, k) => ({ id: ((k * 7919 + 4243) % 20000) + 1, k }))
        .filter(({ k }) => k % 3 !== 0)
        .map(({ id }) => id)
        .sort((a, b) => a - b);
      assert.deepEqual(
        (await stores.groups.listForMember('alice')).map((g) => g.id),
        expected,
      );
      assert.equal((await stores.groups.detail(4244, 'alice'))?.member_status, 0);
    } finally {
      await stores.close();
    }
  });
});

describe('which failures are an outage', () => {
  let db: TestDatabase;
  before(async () => {
    db = await postgres.createDatabase();
    await migratePostgres(db.url);
  });
  after(() => db.drop());

  test('a statement timeout (57014) and a lock timeout (55P03) are; a constraint violation is not', async () => {
    const client = new pg.Client({ connectionString: db.url, statement_timeout: 50, lock_timeout: 50 });
    const holder = new pg.Client({ connectionString: db.url });
    await client.connect();
    await holder.connect();
    try {
      const timeout = await client.query('SELECT pg_sleep(2)').catch((err: unknown) => err);
      assert.equal((timeout as { code?: string }).code, '57014');
      assert.equal(isPostgresUnavailable(timeout), true);
      await client.query('SET statement_timeout = 10000');
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE groups IN ACCESS EXCLUSIVE MODE');
      const locked = await client.query('SELECT 1 FROM groups').catch((err: unknown) => err);
      assert.equal((locked as { code?: string }).code, '55P03');
      assert.equal(isPostgresUnavailable(locked), true);
      await holder.query('ROLLBACK');
      const violation = await client
        .query("INSERT INTO groups (id, name) VALUES (0, 'zero')")
        .catch((err: unknown) => err);
      assert.equal((violation as { code?: string }).code, '23514');
      assert.equal(isPostgresUnavailable(violation), false);
    } finally {
      await client.end();
      await holder.end();
    }
  });

  test('nobody listening, and a pool with no free connection, answer StoreUnavailableError', async () => {
    const port = await freePort();
    const nowhere = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/x` });
    nowhere.on('error', () => {});
    await assert.rejects(query(nowhere, 'SELECT 1'), StoreUnavailableError);
    await nowhere.end();

    const busy = new pg.Pool({ connectionString: db.url, max: 1, connectionTimeoutMillis: 100 });
    busy.on('error', () => {});
    const held = await busy.connect();
    try {
      await assert.rejects(query(busy, 'SELECT 1'), (err: unknown) => {
        assert.ok(err instanceof StoreUnavailableError);
        assert.equal(err.store, 'database');
        assert.match(String((err.cause as Error).message), /timeout exceeded when trying to connect/);
        return true;
      });
    } finally {
      held.release();
      await busy.end();
    }
  });
});

describe('the clubhouse command against PostgreSQL, with sessions in Redis', () => {
  let db: TestDatabase;
  let dir: string;
  let env: Record<string, string>;
  let stores: Stores;
  before(async () => {
    db = await postgres.createDatabase();
    dir = mkdtempSync(join(tmpdir(), 'clubhouse-cli-pg-'));
    env = { DATABASE_URL: db.url, SESSION_STORE: redis.url, REDIS_KEY_PREFIX: redis.keyPrefix() };
  });
  after(async () => {
    await stores?.close();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function cli(...argv: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, env, { out: (text) => out.push(text), err: (text) => err.push(text) });
    return { code, out, err };
  }

  test('migrate, import, export, group and member commands, user disable and sessions revoke', async () => {
    assert.deepEqual(await cli('migrate'), {
      code: 0,
      out: ['Applied migrations: 1, 2, 3, 4, 5, 6.'],
      err: [],
    });
    assert.deepEqual(await cli('migrate'), { code: 0, out: ['Database is up to date.'], err: [] });
    const file = join(dir, 'import.json');
    const data = {
      groups: [
        { id: 1, name: 'Chess Club', description: 'Games.', short_description: '', activities: '', type: 0 },
      ],
      users: [{ username: 'dave', active: true }],
      memberships: [{ group: 1, username: 'alice', status: 1 }],
    };
    writeFileSync(file, JSON.stringify(data));
    assert.deepEqual(await cli('import', file), {
      code: 0,
      out: ['Imported 1 groups, 1 users, 1 memberships.'],
      err: [],
    });
    assert.deepEqual((await cli('group', 'add', '--name', 'Go Club', '--type', '1')).out, [
      'Added group 2: Go Club',
    ]);
    assert.equal((await cli('member', 'set', '2', 'dave', 'admin')).code, 0);
    const exported = await cli('export');
    assert.equal(exported.code, 0);
    assert.deepEqual(JSON.parse(exported.out[0]!), {
      groups: [
        data.groups[0],
        { id: 2, name: 'Go Club', description: '', short_description: '', activities: '', type: 1 },
      ],
      users: [
        { username: 'alice', active: true },
        { username: 'dave', active: true },
      ],
      memberships: [
        { group: 1, username: 'alice', status: 1 },
        { group: 2, username: 'dave', status: 2 },
      ],
    });
    const taken = await cli('group', 'add', '--name', 'Chess Club');
    assert.equal(taken.code, 1);
    assert.deepEqual(taken.err, ['clubhouse: "Chess Club" is already the name of another group']);

    stores = await openStores(
      loadConfig({
        DATABASE_URL: db.url,
        SESSION_STORE: redis.url,
        REDIS_KEY_PREFIX: env['REDIS_KEY_PREFIX']!,
      }).store,
    );
    const now = Date.now();
    const session = (n: number, username: string) =>
      stores.sessions.create(
        {
          idHash: Buffer.alloc(32, n),
          username,
          createdAt: now,
          expiresAt: now + 60_000,
          clientIp: null,
          userAgent: null,
        },
        100,
      );
    await session(1, 'dave');
    await session(2, 'dave');
    await session(3, 'alice');
    assert.deepEqual((await cli('user', 'disable', 'dave')).out, ['Disabled dave; ended 2 sessions.']);
    assert.equal(await stores.sessions.countUser('dave', now), 0);
    assert.deepEqual((await cli('sessions', 'revoke', 'alice')).out, ['Ended 1 sessions of alice.']);
    assert.equal(await stores.sessions.countActive(now), 0);
    assert.deepEqual(
      (await cli('user', 'list')).out[0]?.split('\n').map((line) => line.split('\t')[1]),
      ['active', 'disabled'],
    );
  });
});
