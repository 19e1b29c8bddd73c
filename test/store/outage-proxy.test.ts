// Faults between clubhouse and PostgreSQL / Redis, injected by a TCP proxy: PostgreSQL
// slow past the query timeout, PostgreSQL gone, Redis gone mid-logout. Each gives 503 with
// Retry-After (never a 500, never a silent logged-out state), no crash, no leaked pool clients or
// sockets, and full recovery without a restart when the fault clears.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { pgPool } from '../helpers/engines.ts';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { startPostgres, type TestDatabase, type TestPostgres } from '../helpers/postgres.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';

const UNAVAILABLE = { detail: 'Service temporarily unavailable.' };

function through(url: string, proxy: FaultProxy): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(proxy.port);
  return parsed.toString();
}

async function eventually(
  what: string,
  condition: () => boolean | Promise<boolean>,
  ms = 15_000,
): Promise<void> {
  const until = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > until) assert.fail(`never: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('PostgreSQL behind a fault proxy', () => {
  let server: TestPostgres;
  let database: TestDatabase;
  let proxy: FaultProxy;
  let t: TestApp;
  let pool: pg.Pool;
  before(async () => {
    server = await startPostgres();
    database = await server.createDatabase();
    proxy = await startFaultProxy(Number(new URL(database.url).port));
    t = await startTestApp({
      authenticator: fakeAuthenticator({ alice: 'pw' }),
      env: { DATABASE_URL: through(database.url, proxy) },
    });
    pool = pgPool(t.stores);
  });
  after(async () => {
    proxy.setFault({ kind: 'none' });
    await t.close();
    await proxy.close();
    await database.drop();
    await server.stop();
  });

  const check = (cookie: string) => t.fastify.inject({ url: '/api/auth/check', headers: { cookie } });

  test('slow past the query timeout: 503 + Retry-After; then 200 again, no pool client leaked', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
    assert.equal((await check(cookie)).statusCode, 200);
    proxy.setFault({ kind: 'delay', ms: 8000 });
    const slow = await check(cookie);
    assert.equal(slow.statusCode, 503);
    assert.deepEqual(slow.json(), UNAVAILABLE);
    assert.equal(slow.headers['retry-after'], '5');
    // What ended the wait: the pool's query timeout, as the 503's log line says (without it the
    // delayed answer would come and the check would be 200).
    const causes = t.logs
      .map((line) => JSON.parse(line))
      .filter((entry) => entry.msg === 'store unavailable')
      .map((entry) => `${entry.store}: ${entry.err?.message}`);
    assert.deepEqual(causes, ['database: Query read timeout'], 'the query timeout bounds the wait');
    proxy.setFault({ kind: 'none' });
    await eventually('the check works again', async () => (await check(cookie)).statusCode === 200);
    assert.ok(pool.totalCount <= 10, `${pool.totalCount} pool clients`);
    assert.equal(pool.waitingCount, 0);
    await eventually('every pool client idle again', () => pool.idleCount === pool.totalCount);
  });

  test('gone: 503 for requests that need it, /readyz names the stores, recovery without a restart', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
    proxy.setFault({ kind: 'cut' });
    const gone = await check(cookie);
    assert.equal(gone.statusCode, 503);
    assert.equal(gone.headers['retry-after'], '5');
    const login = await loginAs(t.fastify, 'alice', 'pw');
    assert.equal(login.response.statusCode, 503);
    const ready = await t.fastify.inject({ url: '/readyz' });
    assert.equal(ready.statusCode, 503);
    assert.ok(ready.json().failing.includes('stores'));
    assert.equal(
      (await t.fastify.inject({ url: '/api/auth/check' })).statusCode,
      403,
      'no cookie: the store is not needed',
    );
    assert.equal((await t.fastify.inject({ url: '/healthz' })).statusCode, 200, 'the process is alive');
    proxy.setFault({ kind: 'none' });
    await eventually('the session answers again', async () => (await check(cookie)).statusCode === 200);
    assert.equal((await loginAs(t.fastify, 'alice', 'pw')).response.statusCode, 200);
    assert.ok(pool.totalCount <= 10);
    assert.equal(pool.waitingCount, 0);
  });
});

describe('Redis behind a fault proxy', () => {
  let redis: TestRedis;
  let proxy: FaultProxy;
  let t: TestApp;
  before(async () => {
    redis = await startRedis();
    proxy = await startFaultProxy(Number(new URL(redis.url).port));
    t = await startTestApp({
      authenticator: fakeAuthenticator({ alice: 'pw' }),
      env: { SESSION_STORE: through(redis.url, proxy), REDIS_KEY_PREFIX: redis.keyPrefix() },
    });
  });
  after(async () => {
    proxy.setFault({ kind: 'none' });
    await t.close();
    await proxy.close();
    await redis.stop();
  });

  test('gone mid-logout: 503, not a silent logout; the session ends once Redis is back', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
    assert.equal((await t.fastify.inject({ url: '/api/auth/check', headers: { cookie } })).statusCode, 200);
    proxy.setFault({ kind: 'cut' });
    const logout = await t.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } });
    assert.equal(logout.statusCode, 503);
    assert.deepEqual(logout.json(), UNAVAILABLE);
    assert.equal(
      logout.headers['set-cookie'],
      undefined,
      'the cookie is not cleared while the session lives',
    );
    proxy.setFault({ kind: 'none' });
    await eventually('Redis answers again', async () => {
      const answer = await t.fastify.inject({ url: '/api/auth/check', headers: { cookie } });
      return answer.statusCode === 200;
    });
    const retry = await t.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } });
    assert.equal(retry.statusCode, 200);
    assert.equal((await t.fastify.inject({ url: '/api/auth/check', headers: { cookie } })).statusCode, 403);
    assert.ok(proxy.openConnections() <= 2, `${proxy.openConnections()} Redis connections open`);
  });
});
