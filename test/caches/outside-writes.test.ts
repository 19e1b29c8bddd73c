// Memory that answers requests never outlives what the store says, whoever changed it: here, what an
// operator does behind the service's back (docs/operations.md, "Changing the stores by hand").
// - SQLite: Debian's own sqlite3 shell (installed by the test set-up; 3.40 on Debian 12, older than
//   the 3.42 whose clock the first deletion trigger read) deletes a session, ends one early, and moves
//   one to another user, while two processes (WORKERS=2) serve it from memory.
// - PostgreSQL: an UPDATE that ends a session early, from an operator's SQL session, while two
//   instances serve it from memory.
// - Redis: a session key deleted, a field changed, and a key evicted by Redis itself, behind two
//   instances; an evicting maxmemory-policy stops start-up and fails /readyz; a Redis that refuses
//   CONFIG and publishes no keyspace events gets no session memory at all.
// Every check is asked on the raw read path and, with a query string, on the Fastify route.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { SERVING_MEMORY } from '../../src/app.ts';
import { runCli } from '../../src/cli/main.ts';
import { loadConfig } from '../../src/config/config.ts';
import { openStores } from '../../src/store/open.ts';
import { dovecotEnv, fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { ensureDebianPackage } from '../helpers/apt.ts';
import { postLogin, request, startCluster, type TestCluster } from '../helpers/cluster.ts';
import { type Dovecot, startDovecot, testUser } from '../helpers/dovecot.ts';
import { startPostgres, type TestDatabase, type TestPostgres } from '../helpers/postgres.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../../bin/clubhouse.js', import.meta.url));
const SQLITE3 = '/usr/bin/sqlite3';
/** Asked this many times over fresh connections: the cluster's round robin reaches both workers. */
const ASKS = 6;
const DEADLINE_MS = 30_000;

/** What a cookie gets on every path of every server asked: raw and Fastify, check and the group list. */
async function answers(ports: readonly number[], cookie: string): Promise<Set<string>> {
  const seen = new Set<string>();
  for (const port of ports) {
    for (let i = 0; i < ASKS; i++) {
      for (const path of [
        '/api/auth/check',
        '/api/auth/check?fastify',
        '/api/group/',
        '/api/group/?fastify',
      ]) {
        const answer = await request(port, 'GET', path, { cookie });
        seen.add(`${path.startsWith('/api/auth') ? 'check' : 'groups'} ${answer.status} ${answer.body}`);
      }
    }
  }
  return seen;
}

const cookieOf = (headers: Record<string, string | string[] | undefined>) =>
  ((headers['set-cookie'] ?? []) as string[]).map((c) => c.split(';')[0]).join('; ');

describe('SQLite: the Debian sqlite3 shell changes sessions while two processes serve them from memory', () => {
  let dovecot: Dovecot;
  let cluster: TestCluster;
  let dir: string;
  let file: string;
  let env: Record<string, string>;
  const alice = testUser('user001');
  const bob = testUser('user002');
  const shell = async (sql: string) => {
    await run(SQLITE3, [file, sql]);
  };
  const login = async (user: { username: string; password: string }) => {
    const answer = await postLogin(cluster.port, user.username, user.password);
    assert.equal(answer.status, 200, answer.body);
    return cookieOf(answer.headers);
  };
  /** Both workers know the session: asked on every path, it is answered (and so kept in memory). */
  const warm = async (cookie: string, username: string) => {
    const seen = await answers([cluster.port], cookie);
    assert.deepEqual(
      [...seen].filter((line) => line.startsWith('check')),
      [`check 200 "${username}"`],
    );
  };

  before(async () => {
    await ensureDebianPackage(SQLITE3, 'sqlite3');
    dovecot = await startDovecot();
    dir = mkdtempSync(join(tmpdir(), 'clubhouse-outside-'));
    file = join(dir, 'clubhouse.db');
    env = { DATABASE_URL: `sqlite:${file}` };
    const importFile = join(dir, 'groups.json');
    writeFileSync(
      importFile,
      JSON.stringify({
        groups: [{ id: 1, name: 'Chess', description: '', short_description: '', activities: '', type: 0 }],
        memberships: [
          { group: 1, username: alice.username, status: 1 },
          { group: 1, username: bob.username, status: 1 },
        ],
      }),
    );
    await run(process.execPath, ['--disable-warning=ExperimentalWarning', BIN, 'import', importFile], {
      env: { PATH: process.env['PATH'] ?? '', ...env },
    });
    cluster = await startCluster({ ...env, ...dovecotEnv(dovecot) }, 2);
  });
  after(async () => {
    await cluster?.stop();
    await dovecot?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the shell is the one Debian ships', async () => {
    const { stdout } = await run(SQLITE3, ['-version']);
    assert.match(stdout, /^3\.\d+\.\d+/);
  });

  test('a session deleted in the shell is refused by both processes on the very next request', async () => {
    const cookie = await login(alice);
    await warm(cookie, alice.username);
    await shell(`DELETE FROM sessions WHERE username = '${alice.username}'`);
    assert.deepEqual(
      await answers([cluster.port], cookie),
      new Set(['check 403 ""', 'groups 403 {"detail":"Authentication credentials were not provided."}']),
    );
  });

  test('a session ended early in the shell (expires_at moved back) is refused at once', async () => {
    const cookie = await login(alice);
    await warm(cookie, alice.username);
    await shell(`UPDATE sessions SET expires_at = 1 WHERE username = '${alice.username}'`);
    assert.deepEqual(
      await answers([cluster.port], cookie),
      new Set(['check 403 ""', 'groups 403 {"detail":"Authentication credentials were not provided."}']),
    );
  });

  test('a session moved to another user in the shell answers as that user at once', async () => {
    await login(bob);
    const cookie = await login(alice);
    await warm(cookie, alice.username);
    await shell(
      `UPDATE sessions SET username = '${bob.username}' WHERE username = '${alice.username}' AND expires_at > 1`,
    );
    const seen = await answers([cluster.port], cookie);
    assert.deepEqual(
      [...seen].filter((line) => line.startsWith('check')),
      [`check 200 "${bob.username}"`],
    );
  });

  test('a user disabled after the shell deleted their sessions reads nothing', async () => {
    const cookie = await login(alice);
    await warm(cookie, alice.username);
    await shell(`DELETE FROM sessions WHERE username = '${alice.username}'`);
    const disabled = await run(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', BIN, 'user', 'disable', alice.username],
      { env: { PATH: process.env['PATH'] ?? '', ...env } },
    );
    assert.match(disabled.stdout, /^Disabled /);
    assert.ok(
      [...(await answers([cluster.port], cookie))].every((line) => / 403 /.test(line)),
      'nothing answered from memory',
    );
    await run(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', BIN, 'user', 'enable', alice.username],
      {
        env: { PATH: process.env['PATH'] ?? '', ...env },
      },
    );
  });
});

/** Two instances on one database (and one Redis), each with its own memory, listening on a socket. */
async function twoInstances(env: Record<string, string>): Promise<{ apps: TestApp[]; ports: number[] }> {
  const apps: TestApp[] = [];
  for (let i = 0; i < 2; i++)
    apps.push(await startTestApp({ authenticator: fakeAuthenticator({ alice: 'pw' }), env }));
  const ports = await Promise.all(
    apps.map(async (app) => Number(new URL(await app.fastify.listen({ port: 0, host: '127.0.0.1' })).port)),
  );
  return { apps, ports };
}

describe('PostgreSQL: an operator ends a session early while two instances serve it from memory', () => {
  let postgres: TestPostgres;
  let database: TestDatabase;
  let apps: TestApp[];
  let ports: number[];
  before(async () => {
    postgres = await startPostgres();
    database = await postgres.createDatabase();
    ({ apps, ports } = await twoInstances({ DATABASE_URL: database.url }));
  });
  after(async () => {
    for (const app of apps ?? []) await app.close();
    await database?.drop();
  });

  test('UPDATE sessions SET expires_at … is refused by both on the very next request', async () => {
    const { cookie } = await loginAs(apps[0]!.fastify, 'alice', 'pw');
    assert.deepEqual(
      [...(await answers(ports, cookie))].filter((line) => line.startsWith('check')),
      ['check 200 "alice"'],
    );
    const sql = loadConfig({ DATABASE_URL: database.url }).store;
    const operator = await openStores(sql);
    try {
      if (operator.engine.database !== 'postgres') throw new Error('PostgreSQL expected');
      await operator.engine.pool.query(`UPDATE sessions SET expires_at = $1`, [Date.now() - 1]);
    } finally {
      await operator.close();
    }
    assert.deepEqual(
      await answers(ports, cookie),
      new Set(['check 403 ""', 'groups 403 {"detail":"Authentication credentials were not provided."}']),
    );
  });
});

describe('Redis: keys changed or lost behind the service’s back', () => {
  let postgres: TestPostgres;
  let database: TestDatabase;
  let redis: TestRedis;
  let client: Redis;
  let prefix: string;
  let apps: TestApp[];
  let ports: number[];
  before(async () => {
    postgres = await startPostgres();
    database = await postgres.createDatabase();
    redis = await startRedis({ private: true });
    client = new Redis(redis.url, { lazyConnect: true });
    await client.connect();
    prefix = redis.keyPrefix();
    ({ apps, ports } = await twoInstances({
      DATABASE_URL: database.url,
      SESSION_STORE: redis.url,
      REDIS_KEY_PREFIX: prefix,
    }));
  });
  after(async () => {
    for (const app of apps ?? []) await app.close();
    client?.disconnect();
    await redis?.stop();
    await database?.drop();
  });

  /** A new session of alice's, known to both instances' memories; its key. */
  const remembered = async () => {
    const { cookie } = await loginAs(apps[0]!.fastify, 'alice', 'pw');
    assert.deepEqual(
      [...(await answers(ports, cookie))].filter((line) => line.startsWith('check')),
      ['check 200 "alice"'],
    );
    const keys = await client.keys(`${prefix}session:*`);
    const key = (
      await Promise.all(keys.map(async (k) => ({ k, created: Number(await client.hget(k, 'created_at')) })))
    ).sort((a, b) => b.created - a.created)[0]!.k;
    return { cookie, key };
  };
  const refused = new Set([
    'check 403 ""',
    'groups 403 {"detail":"Authentication credentials were not provided."}',
  ]);

  test('the service turned the keyspace events on that its memory needs', async () => {
    const [, flags] = (await client.call('CONFIG', 'GET', 'notify-keyspace-events')) as string[];
    for (const flag of ['K', 'g', 'h', 'x', 'e']) assert.ok(flags!.includes(flag), `${flag} in ${flags}`);
  });

  test('a session key deleted by an operator is refused by both on the very next request', async () => {
    const { cookie, key } = await remembered();
    assert.equal(await client.del(key), 1);
    assert.deepEqual(await answers(ports, cookie), refused);
  });

  test('a session ended early by an operator (HSET expires_at) is refused at once', async () => {
    const { cookie, key } = await remembered();
    await client.hset(key, 'expires_at', String(Date.now() - 1));
    assert.deepEqual(await answers(ports, cookie), refused);
  });

  test('a session evicted by Redis is refused at once; /readyz says the policy evicts', async () => {
    const { cookie, key } = await remembered();
    // Every session key has a TTL, so a volatile-* policy can pick it: volatile-ttl takes the
    // shortest, and the filler below lives longer than any session.
    await client.call('CONFIG', 'SET', 'maxmemory-policy', 'volatile-ttl');
    const used = Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
    await client.call('CONFIG', 'SET', 'maxmemory', String(used + 2 * 1024 * 1024));
    try {
      const ready = await apps[1]!.fastify.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 503);
      assert.match(ready.body, /maxmemory-policy volatile-ttl/);
      const deadline = Date.now() + DEADLINE_MS;
      for (let i = 0; (await client.exists(key)) === 1; i++) {
        assert.ok(Date.now() < deadline, 'the session key was never evicted');
        await client.set(`${prefix}filler:${i}`, 'x'.repeat(64 * 1024), 'PX', 60 * 86_400_000);
      }
      assert.ok(Number(/evicted_keys:(\d+)/.exec(await client.info('stats'))![1]) > 0);
    } finally {
      await client.call('CONFIG', 'SET', 'maxmemory', '0');
      await client.call('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    }
    assert.deepEqual(await answers(ports, cookie), refused);
    assert.equal((await apps[1]!.fastify.inject({ url: '/readyz' })).statusCode, 200);
  });

  test('an instance does not start on a Redis whose policy evicts, and config check says so', async () => {
    await client.call('CONFIG', 'SET', 'maxmemory', String(1024 * 1024 * 1024));
    await client.call('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      const out: string[] = [];
      const env = { DATABASE_URL: database.url, SESSION_STORE: redis.url, REDIS_KEY_PREFIX: prefix };
      await runCli(['config', 'check'], env, { out: (text) => out.push(text), err: () => {} });
      assert.match(
        out.join('\n'),
        /warning: SESSION_STORE: maxmemory-policy allkeys-lru .* the server will not start/,
      );
      const config = loadConfig({
        DATABASE_URL: database.url,
        SESSION_STORE: redis.url,
        REDIS_KEY_PREFIX: prefix,
      });
      await assert.rejects(
        openStores(config.store, { memory: SERVING_MEMORY }),
        /maxmemory-policy allkeys-lru/,
      );
    } finally {
      await client.call('CONFIG', 'SET', 'maxmemory', '0');
      await client.call('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    }
  });
});

describe('Redis without keyspace events (CONFIG refused, as on a managed service)', () => {
  let postgres: TestPostgres;
  let database: TestDatabase;
  let redis: TestRedis;
  let client: Redis;
  let apps: TestApp[];
  let ports: number[];
  before(async () => {
    postgres = await startPostgres();
    database = await postgres.createDatabase();
    redis = await startRedis({ args: ['--rename-command', 'CONFIG', ''] });
    client = new Redis(redis.url, { lazyConnect: true });
    await client.connect();
    ({ apps, ports } = await twoInstances({
      DATABASE_URL: database.url,
      SESSION_STORE: redis.url,
      REDIS_KEY_PREFIX: redis.keyPrefix(),
    }));
  });
  after(async () => {
    for (const app of apps ?? []) await app.close();
    client?.disconnect();
    await redis?.stop();
    await database?.drop();
  });

  test('no session is answered from memory, so a key an operator deletes is refused at once', async () => {
    const { cookie } = await loginAs(apps[0]!.fastify, 'alice', 'pw');
    let fromMemory = 0;
    for (const app of apps) {
      const remember = app.sessions.fromMemory.bind(app.sessions);
      app.sessions.fromMemory = (id) => {
        const answer = remember(id);
        if (typeof answer === 'string') fromMemory++;
        return answer;
      };
    }
    // Give a re-arm every chance to (wrongly) open memory.
    await sleep(100);
    assert.deepEqual(
      [...(await answers(ports, cookie))].filter((line) => line.startsWith('check')),
      ['check 200 "alice"'],
    );
    assert.equal(fromMemory, 0, 'Redis answered every check');
    for (const key of await client.keys('*session:*')) await client.del(key);
    assert.ok([...(await answers(ports, cookie))].every((line) => / 403 /.test(line)));
  });
});
