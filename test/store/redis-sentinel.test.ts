// Sessions in Redis behind Sentinel (SESSION_STORE=redis-sentinel://…/clubhouse), with a
// primary, a replica and three sentinels from the harness. The primary is killed under a stream of
// logins and checks: meanwhile every answer is 200 or 503 with Retry-After (never a 500, never a
// session that looks gone); afterwards the same process serves again without a restart, and the
// sessions written and replicated before the failover are still there.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LightMyRequestResponse } from 'fastify';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { startSentinel, type TestSentinel } from '../helpers/sentinel.ts';

const USERS = Array.from({ length: 6 }, (_, i) => `member${i}`);
const PASSWORDS = Object.fromEntries(USERS.map((name) => [name, `${name}-pw`]));
// Generous: detection (1 s) + election + promotion, on a loaded 2-core machine.
const FAILOVER_DEADLINE_MS = 45_000;

describe('Redis Sentinel failover', () => {
  let sentinel: TestSentinel;
  let t: TestApp;
  before(async () => {
    sentinel = await startSentinel();
    t = await startTestApp({
      authenticator: fakeAuthenticator(PASSWORDS),
      env: { SESSION_STORE: sentinel.sessionStore, REDIS_KEY_PREFIX: 'test:sentinel:' },
    });
  });
  after(async () => {
    await t?.close();
    await sentinel?.stop();
  });

  const check = (cookie: string) => t.fastify.inject({ url: '/api/auth/check', headers: { cookie } });

  /** contract §2: a store outage is 503 with Retry-After; anything else here is a defect. */
  function assertOkOrUnavailable(response: LightMyRequestResponse, what: string) {
    if (response.statusCode === 200) return;
    assert.equal(response.statusCode, 503, `${what}: ${response.statusCode} ${response.body}`);
    assert.equal(response.headers['retry-after'], '5', what);
  }

  test('the settings name the sentinels; a killed primary costs 503s at worst, and nothing else', async () => {
    assert.deepEqual(t.stores.tls, { database: 'local', sessions: 'off' });
    const before: string[] = [];
    for (const name of USERS) {
      const { response, cookie } = await loginAs(t.fastify, name, PASSWORDS[name]!);
      assert.equal(response.statusCode, 200);
      before.push(cookie);
    }
    // "Written before the failover and replicated": the replica has acknowledged them.
    await sentinel.waitForReplication();

    let running = true;
    const seen = { ok: 0, unavailable: 0 };
    const stream = (async () => {
      for (let i = 0; running; i++) {
        const name = USERS[i % USERS.length]!;
        const login = await loginAs(t.fastify, name, PASSWORDS[name]!);
        assertOkOrUnavailable(login.response, `login ${i}`);
        const response = await check(before[i % before.length]!);
        // A session that existed must never answer 403 (a silent logout), only 200 or 503.
        assertOkOrUnavailable(response, `check ${i}`);
        for (const status of [login.response.statusCode, response.statusCode]) {
          if (status === 200) seen.ok++;
          else seen.unavailable++;
        }
        await sleep(10);
      }
    })();
    try {
      await sleep(300);
      await sentinel.killPrimary();
      const deadline = Date.now() + FAILOVER_DEADLINE_MS;
      while ((await sentinel.primaryNow().catch(() => 0)) !== sentinel.replicaPort) {
        assert.ok(Date.now() < deadline, `no failover within ${FAILOVER_DEADLINE_MS} ms`);
        await sleep(100);
      }
      // Served again by the same process, without a restart.
      for (;;) {
        const response = await check(before[0]!);
        if (response.statusCode === 200) break;
        assert.ok(
          Date.now() < deadline,
          `still ${response.statusCode} ${response.body} ${FAILOVER_DEADLINE_MS} ms after the kill`,
        );
        await sleep(100);
      }
      await sleep(500);
    } finally {
      running = false;
      await stream;
    }
    // The primary was silent for at least the sentinels' 1 s detection time: the stream saw it.
    assert.ok(
      seen.ok > 0 && seen.unavailable > 0,
      `the stream ran through the outage: ${JSON.stringify(seen)}`,
    );

    for (const [i, cookie] of before.entries()) {
      const response = await check(cookie);
      assert.equal(response.statusCode, 200, `session of ${USERS[i]} after the failover`);
      assert.equal(response.json(), USERS[i]);
    }
    const fresh = await loginAs(t.fastify, 'member0', PASSWORDS['member0']!);
    assert.equal(fresh.response.statusCode, 200);
    assert.equal((await check(fresh.cookie)).statusCode, 200);
    assert.equal((await t.fastify.inject({ url: '/readyz' })).json().checks.stores, 'ok');
  });
});

describe('SESSION_STORE=redis-sentinel://', () => {
  test('takes sentinel addresses and a name; a password, TLS or an empty list is an invalid setting', () => {
    assert.equal(
      loadConfig({
        SESSION_STORE: 'redis-sentinel://10.0.0.1:26379,[::1],sentinel.example.org:26380/mymaster',
      }).sessionStore,
      'redis-sentinel://10.0.0.1:26379,[::1],sentinel.example.org:26380/mymaster',
    );
    for (const sessionStore of [
      'redis-sentinel://:secret@10.0.0.1:26379/mymaster',
      'redis-sentinel://10.0.0.1:26379',
      'redis-sentinel:///mymaster',
      'redis-sentinel://10.0.0.1:99999/mymaster',
      'redis-sentinel://10.0.0.1:26379,/mymaster',
      'memcached://10.0.0.1',
    ]) {
      assert.throws(
        () => loadConfig({ SESSION_STORE: sessionStore }),
        (err: unknown) => err instanceof ConfigError && err.variable === 'SESSION_STORE',
        sessionStore,
      );
    }
    assert.throws(
      () =>
        loadConfig({ SESSION_STORE: 'redis-sentinel://10.0.0.1/mymaster', REDIS_CA_FILE: 'package.json' }),
      (err: unknown) => err instanceof ConfigError && err.variable === 'REDIS_CA_FILE',
    );
  });
});
