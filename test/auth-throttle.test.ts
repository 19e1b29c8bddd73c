// Contract §3: login throttling per username and per client IP.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { Authenticator, VerifyResult } from '../src/backends/imap/authenticator.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { describeEachStore, storesOf } from './helpers/stores.ts';

const STORES = storesOf('sqlite', 'postgres', 'redis', 'redis-postgres', 'pgbouncer');

const PASSWORD = 'right-password';

/** Accepts PASSWORD for anyone; `unavailable` simulates an IMAP outage; `delayMs` keeps attempts in flight. */
function scriptedAuthenticator() {
  const auth = {
    calls: 0,
    unavailable: false,
    delayMs: 0,
    async verify(_username: string, password: string): Promise<VerifyResult> {
      auth.calls++;
      if (auth.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, auth.delayMs));
      if (auth.unavailable) return { ok: false, failure: 'upstream_unavailable', reason: 'ECONNREFUSED' };
      return password === PASSWORD
        ? { ok: true }
        : { ok: false, failure: 'bad_credentials', reason: 'IMAP NO' };
    },
    refusalDelayMs: () => 0,
    maxVerifyMs: 10_000,
    stats: () => ({ active: 0, queued: 0, breaker: 'closed' }),
  } satisfies Authenticator & Record<string, unknown>;
  return auth;
}

describeEachStore(STORES, 'login throttling', (store) => {
  let t: TestApp;
  let auth: ReturnType<typeof scriptedAuthenticator>;
  beforeEach(async () => {
    auth = scriptedAuthenticator();
    t = await startTestApp({ store, authenticator: auth, fixedClock: true });
  });
  afterEach(() => t.close());

  const attempt = (username: string, password: string, ip = '198.51.100.7') =>
    t.fastify.inject({
      method: 'POST',
      url: '/api/auth/login',
      remoteAddress: ip,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ username, password }),
    });

  test('after 5 counted failures for a username the 6th attempt gets 429 without IMAP', async () => {
    for (let i = 0; i < 5; i++) assert.equal((await attempt('alice', `guess-${i}`)).statusCode, 403);
    assert.equal(auth.calls, 5);
    const sixth = await attempt('alice', PASSWORD, '203.0.113.9');
    assert.equal(sixth.statusCode, 429);
    assert.equal(sixth.headers['retry-after'], '900');
    assert.deepEqual(sixth.json(), { detail: 'Request was throttled. Expected available in 900 seconds.' });
    assert.equal(auth.calls, 5, 'IMAP is not contacted while throttled');
    assert.equal(
      (await attempt('bob', PASSWORD, '203.0.113.9')).statusCode,
      200,
      'other users are not affected',
    );
  });

  test('Retry-After counts down and the lock lifts when the failures leave the 15-minute window', async () => {
    for (let i = 0; i < 5; i++) {
      await attempt('alice', `guess-${i}`);
      t.clock.advance(10_000);
    }
    // The oldest of the five counted failures was 50 s ago: it leaves the window in 850 s.
    const locked = await attempt('alice', PASSWORD);
    assert.equal(locked.statusCode, 429);
    assert.equal(locked.headers['retry-after'], '850');
    t.clock.advance(849_000);
    assert.equal((await attempt('alice', PASSWORD)).headers['retry-after'], '1');
    t.clock.advance(1_000);
    assert.equal((await attempt('alice', PASSWORD)).statusCode, 200);
  });

  test('the same wrong password repeated counts once (a stale phone does not lock its owner out)', async () => {
    for (let i = 0; i < 12; i++) assert.equal((await attempt('alice', 'old-password')).statusCode, 403);
    assert.equal((await attempt('alice', PASSWORD)).statusCode, 200);
  });

  test('a success clears the username count', async () => {
    for (let i = 0; i < 4; i++) await attempt('alice', `guess-${i}`);
    assert.equal((await attempt('alice', PASSWORD)).statusCode, 200);
    for (let i = 4; i < 8; i++) assert.equal((await attempt('alice', `guess-${i}`)).statusCode, 403);
    assert.equal((await attempt('alice', PASSWORD)).statusCode, 200);
  });

  test("a client IP that has logged in as the user is not held back by that user's lock", async () => {
    const home = '192.0.2.10';
    const attacker = '198.51.100.66';
    assert.equal((await attempt('alice', PASSWORD, home)).statusCode, 200);
    for (let i = 0; i < 5; i++) await attempt('alice', `guess-${i}`, attacker);
    assert.equal((await attempt('alice', PASSWORD, attacker)).statusCode, 429, 'the attacker is locked out');
    assert.equal((await attempt('alice', PASSWORD, home)).statusCode, 200, 'the owner is not');
  });

  test('50 counted failures from one IP throttle that IP for every username', async () => {
    for (let i = 0; i < 50; i++) assert.equal((await attempt(`user${i}`, 'wrong')).statusCode, 403);
    const next = await attempt('somebody', PASSWORD);
    assert.equal(next.statusCode, 429);
    assert.ok(Number(next.headers['retry-after']) <= 900);
    assert.equal(
      (await attempt('somebody', PASSWORD, '192.0.2.200')).statusCode,
      200,
      'other IPs are not affected',
    );
  });

  test('only bad credentials count: outages, 400s, CSRF refusals and control characters lock nobody out', async () => {
    auth.unavailable = true;
    for (let i = 0; i < 6; i++) assert.equal((await attempt('alice', `pw-${i}`)).statusCode, 403);
    auth.unavailable = false;
    for (let i = 0; i < 6; i++) {
      assert.equal((await attempt('alice', `pw\u0000${i}`)).statusCode, 403);
      const csrf = await t.fastify.inject({
        method: 'POST',
        url: '/api/auth/login',
        remoteAddress: '198.51.100.7',
        headers: {
          'content-type': 'application/json',
          origin: 'https://evil.example',
          host: 'clubhouse.example',
        },
        payload: JSON.stringify({ username: 'alice', password: `x${i}` }),
      });
      assert.equal(csrf.statusCode, 403);
      const invalid = await t.fastify.inject({
        method: 'POST',
        url: '/api/auth/login',
        remoteAddress: '198.51.100.7',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ username: 'alice', password: '' }),
      });
      assert.equal(invalid.statusCode, 400);
    }
    assert.equal((await attempt('alice', PASSWORD)).statusCode, 200);
  });

  test('refusals of a disabled user count like bad credentials: the 6th attempt gets 429, IMAP never asked', async () => {
    await t.stores.users.recordLogin('dave', t.clock.now, true);
    await t.stores.users.setActive('dave', false);
    for (let i = 0; i < 5; i++) assert.equal((await attempt('dave', `guess-${i}`)).statusCode, 403);
    const sixth = await attempt('dave', 'another-guess', '203.0.113.9');
    assert.equal(sixth.statusCode, 429);
    assert.equal(sixth.headers['retry-after'], '900');
    assert.equal(auth.calls, 0);
    // Both counters, as for bad credentials: the client IP's too.
    const ip = await t.stores.throttle.recentFailures('ip:198.51.100.7', 50, t.clock.now, 900_000);
    assert.equal(ip.length, 5);
  });

  test('the same password for a disabled user counts once', async () => {
    await t.stores.users.recordLogin('dave', t.clock.now, true);
    await t.stores.users.setActive('dave', false);
    for (let i = 0; i < 12; i++) assert.equal((await attempt('dave', 'dave-password')).statusCode, 403);
    assert.equal((await t.stores.throttle.recentFailures('u:dave', 5, t.clock.now, 900_000)).length, 1);
  });

  test('a burst of parallel guesses cannot slip past the limit', async () => {
    auth.delayMs = 30;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => attempt('alice', `parallel-${i}`)),
    );
    const statuses = results.map((r) => r.statusCode);
    assert.ok(auth.calls <= 5, `${auth.calls} guesses reached IMAP`);
    assert.equal(statuses.filter((s) => s === 429).length, 20 - auth.calls);
    // If the 5 guesses in flight all fail, alice is locked for the whole window from now: the
    // earliest the refused ones could get through (the clock stands still here).
    for (const r of results.filter((r) => r.statusCode === 429))
      assert.equal(r.headers['retry-after'], '900');
  });

  // SQLite only: it reads the table itself (store-contract.test.ts proves the same of every store).
  if (store.kind === 'sqlite') {
    test('the password is never stored, only a keyed hash', async () => {
      await attempt('alice', 'very-secret-guess');
      const db = (t.stores as unknown as { db: import('node:sqlite').DatabaseSync }).db;
      const dump = JSON.stringify(db.prepare('SELECT * FROM throttle_failures').all());
      assert.ok(dump.includes('u:alice'));
      assert.ok(!dump.includes('very-secret-guess'));
    });
  }
});

describeEachStore(STORES, 'ALLOW_NEW_USERS=false', (store) => {
  test('refusals of an unknown username count like bad credentials: the 6th attempt gets 429', async () => {
    const auth = scriptedAuthenticator();
    const t = await startTestApp({
      store,
      authenticator: auth,
      fixedClock: true,
      env: { ALLOW_NEW_USERS: 'false' },
    });
    try {
      const attempt = (password: string, ip: string) =>
        t.fastify.inject({
          method: 'POST',
          url: '/api/auth/login',
          remoteAddress: ip,
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ username: 'mallory', password }),
        });
      for (let i = 0; i < 5; i++) assert.equal((await attempt(`guess-${i}`, '198.51.100.7')).statusCode, 403);
      const sixth = await attempt(PASSWORD, '203.0.113.9');
      assert.equal(sixth.statusCode, 429);
      assert.equal(sixth.headers['retry-after'], '900');
      assert.equal(auth.calls, 0);
    } finally {
      await t.close();
    }
  });
});

describeEachStore(STORES, 'throttle limits are settings', (store) => {
  test('THROTTLE_USER_FAILURES and THROTTLE_WINDOW_SECONDS', async () => {
    const auth = scriptedAuthenticator();
    const t = await startTestApp({
      store,
      authenticator: auth,
      fixedClock: true,
      env: { THROTTLE_USER_FAILURES: '2', THROTTLE_WINDOW_SECONDS: '60' },
    });
    try {
      const attempt = (password: string) =>
        t.fastify.inject({
          method: 'POST',
          url: '/api/auth/login',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ username: 'alice', password }),
        });
      await attempt('a');
      await attempt('b');
      const third = await attempt(PASSWORD);
      assert.equal(third.statusCode, 429);
      assert.equal(third.headers['retry-after'], '60');
      t.clock.advance(60_000);
      assert.equal((await attempt(PASSWORD)).statusCode, 200);
    } finally {
      await t.close();
    }
  });
});
