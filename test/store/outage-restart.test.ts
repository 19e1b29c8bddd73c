// PostgreSQL or Redis stopped under a running app (private servers of the harness): the
// requests that need the store answer 503 + Retry-After (never a 500, never a silent logged-out
// state), those that do not are served, and once the server is back the same process serves again
// without a restart.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { startPostgres, type TestPostgres } from '../helpers/postgres.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';

const UNAVAILABLE = { detail: 'Service temporarily unavailable.' };
const PASSWORDS = { alice: 'alice-pw', bob: 'bob-pw' };
const RECOVERY_DEADLINE_MS = 30_000;

const check = (t: TestApp, cookie?: string) =>
  t.fastify.inject({ url: '/api/auth/check', headers: cookie === undefined ? {} : { cookie } });

/** Retries `probe` until it answers `status` (a store coming back); fails after the deadline. */
async function until(status: number, probe: () => Promise<{ statusCode: number }>): Promise<void> {
  const deadline = Date.now() + RECOVERY_DEADLINE_MS;
  for (;;) {
    const { statusCode } = await probe();
    if (statusCode === status) return;
    if (Date.now() > deadline)
      assert.fail(`still ${statusCode}, not ${status}, after ${RECOVERY_DEADLINE_MS} ms`);
    await sleep(100);
  }
}

describe('PostgreSQL stopped mid-run, then started again', () => {
  let postgres: TestPostgres;
  let t: TestApp;
  before(async () => {
    postgres = await startPostgres({ private: true });
    const db = await postgres.createDatabase();
    t = await startTestApp({ authenticator: fakeAuthenticator(PASSWORDS), env: { DATABASE_URL: db.url } });
  });
  after(async () => {
    await t?.close();
    await postgres.stop();
  });

  test('requests that need it answer 503 + Retry-After, then 200 again without a restart', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', PASSWORDS.alice);
    assert.equal((await check(t, cookie)).statusCode, 200);
    await postgres.stopServer!();

    for (const response of [
      await check(t, cookie),
      await t.fastify.inject({ url: '/api/group/', headers: { cookie } }),
      (await loginAs(t.fastify, 'bob', PASSWORDS.bob)).response,
    ]) {
      assert.equal(response.statusCode, 503);
      assert.deepEqual(response.json(), UNAVAILABLE);
      assert.equal(response.headers['retry-after'], '5');
    }
    const anonymous = await check(t);
    assert.equal(anonymous.statusCode, 403, 'a request without a session cookie does not need the store');
    assert.ok(
      t.logs.some((line) => line.includes('store unavailable') && line.includes('"store":"database"')),
    );

    await postgres.startServer!();
    await until(200, () => check(t, cookie));
    assert.equal((await check(t, cookie)).body, '"alice"', 'the session outlived the outage');
    const again = await loginAs(t.fastify, 'bob', PASSWORDS.bob);
    assert.equal(again.response.statusCode, 200);
    assert.equal((await check(t, again.cookie)).body, '"bob"');
  });
});

describe('Redis stopped mid-run, then started again', () => {
  let redis: TestRedis;
  let t: TestApp;
  before(async () => {
    redis = await startRedis({ private: true });
    t = await startTestApp({
      authenticator: fakeAuthenticator(PASSWORDS),
      env: { SESSION_STORE: redis.url, REDIS_KEY_PREFIX: redis.keyPrefix() },
    });
  });
  after(async () => {
    await t?.close();
    await redis.stop();
  });

  test('requests that need it answer 503 + Retry-After, then 200 again without a restart', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', PASSWORDS.alice);
    assert.equal((await check(t, cookie)).statusCode, 200);
    await redis.stopServer!();

    for (const response of [
      await check(t, cookie),
      await t.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } }),
      (await loginAs(t.fastify, 'bob', PASSWORDS.bob)).response,
    ]) {
      assert.equal(response.statusCode, 503);
      assert.deepEqual(response.json(), UNAVAILABLE);
      assert.equal(response.headers['retry-after'], '5');
    }
    assert.equal((await check(t)).statusCode, 403, 'a request without a session cookie does not need Redis');
    assert.ok(
      t.logs.some((line) => line.includes('store unavailable') && line.includes('"store":"sessions"')),
    );

    // The harness's Redis keeps nothing across a restart: the old session is gone, new ones work.
    await redis.startServer!();
    await until(200, async () => (await loginAs(t.fastify, 'bob', PASSWORDS.bob)).response);
    const again = await loginAs(t.fastify, 'bob', PASSWORDS.bob);
    assert.equal((await check(t, again.cookie)).body, '"bob"');
    assert.equal((await check(t, cookie)).statusCode, 403);
  });
});
