// Contract §3: login throttling per username and per client IP.
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import type { Authenticator, VerifyResult } from '../../src/backends/authenticator.ts';
import { FAKE_CHAIN, startTestApp, type TestApp } from '../helpers/app.ts';
import { sqliteDb } from '../helpers/engines.ts';
import { describeEachStore, type StoreData } from '../helpers/stores.ts';

const PASSWORD = 'right-password';

/** Accepts PASSWORD for anyone; `unavailable` simulates an IMAP outage; `delayMs` keeps attempts in flight. */
function scriptedAuthenticator() {
  const auth = {
    calls: 0,
    unavailable: false,
    delayMs: 0,
    /** When set, every verification waits for it: the guesses stay in flight until the test says. */
    hold: null as Promise<void> | null,
    async verify(_username: string, password: string): Promise<VerifyResult> {
      auth.calls++;
      if (auth.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, auth.delayMs));
      if (auth.hold !== null) await auth.hold;
      if (auth.unavailable) return { ok: false, failure: 'upstream_unavailable', reason: 'ECONNREFUSED' };
      return password === PASSWORD
        ? { ok: true }
        : { ok: false, failure: 'bad_credentials', reason: 'IMAP NO' };
    },
    refusalDelayMs: () => 0,
    maxVerifyMs: 10_000,
    ...FAKE_CHAIN,
  } satisfies Authenticator & Record<string, unknown>;
  return auth;
}

/**
 * Refusals decided without the backend, held until released: how a test keeps them in flight. The
 * app's refusal waits go through `sleep`; `asked(n)` resolves once n of them are waiting.
 */
function refusalGate() {
  let open = true;
  const waiting: (() => void)[] = [];
  const watchers: { n: number; resolve: () => void }[] = [];
  const gate = {
    sleep: (_ms: number) =>
      open
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            waiting.push(resolve);
            for (const watcher of watchers.filter((w) => waiting.length >= w.n)) watcher.resolve();
          }),
    asked: (n: number) =>
      new Promise<void>((resolve) => {
        if (waiting.length >= n) resolve();
        else watchers.push({ n, resolve });
      }),
    hold() {
      open = false;
    },
    release() {
      open = true;
      for (const resolve of waiting.splice(0)) resolve();
    },
  };
  return gate;
}

describeEachStore('login throttling', (store) => {
  // A fresh app for each test, on one database emptied after each.
  let data: StoreData;
  let t: TestApp;
  let auth: ReturnType<typeof scriptedAuthenticator>;
  let gate: ReturnType<typeof refusalGate>;
  const heldRefusals = () => gate;
  before(async () => {
    data = await store.create();
  });
  after(() => data?.drop());
  beforeEach(async () => {
    auth = scriptedAuthenticator();
    gate = refusalGate();
    // Refusals decided here ask for a wait, which the gate lets pass at once unless a test holds it.
    auth.refusalDelayMs = () => 1000;
    t = await startTestApp({ data, authenticator: auth, fixedClock: true, sleep: gate.sleep });
  });
  afterEach(async () => {
    await data.reset(t.stores);
    await t.close();
  });

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
    let release: () => void = () => undefined;
    auth.hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The guesses let through stay in flight until every other one has been answered.
    let answered = 0;
    const pending = Array.from({ length: 20 }, (_, i) =>
      attempt('alice', `parallel-${i}`).then((response) => {
        answered++;
        return response;
      }),
    );
    while (answered < 15) await new Promise((resolve) => setTimeout(resolve, 5));
    release();
    const results = await Promise.all(pending);
    const statuses = results.map((r) => r.statusCode);
    assert.equal(auth.calls, 5, `${auth.calls} guesses reached IMAP`);
    assert.equal(statuses.filter((s) => s === 429).length, 15);
    // The lock is made only of guesses in flight, which are over within the
    // longest an attempt lasts (the authenticator's 10 s here); then a retry is admitted or learns the
    // window's wait. Not 900 s: five guesses that last two seconds must not hold the owner out that long.
    for (const r of results.filter((r) => r.statusCode === 429)) assert.equal(r.headers['retry-after'], '10');
  });

  // Input refused before any backend was once admitted as a guess in flight, so five such attempts
  // at once (from anywhere, repeated) gave the owner 429 with Retry-After 900.
  test('attempts refused for a control character are never admitted: the owner is not held out', async () => {
    const held = heldRefusals();
    held.hold();
    const refused = Array.from({ length: 5 }, (_, i) => attempt('alice', `x\u0000${i}`, `203.0.113.${i}`));
    await held.asked(5);
    assert.equal((await attempt('alice', PASSWORD, '192.0.2.44')).statusCode, 200, 'the owner logs in');
    held.release();
    for (const answer of await Promise.all(refused)) assert.equal(answer.statusCode, 403);
    assert.deepEqual(await t.stores.throttle.recentFailures('u:alice', 5, t.clock.now, 900_000), []);
    assert.equal(auth.calls, 1, 'only the owner reached the backend');
  });

  // The per-IP limit once counted only recorded failures, so 300 parallel guesses over distinct
  // usernames from one address all reached the backend.
  test('guesses in flight count toward the per-IP limit: a parallel burst lets at most 50 through', async () => {
    auth.delayMs = 50;
    const answers = await Promise.all(
      Array.from({ length: 120 }, (_, i) => attempt(`burst${i}`, `guess-${i}`, '198.51.100.99')),
    );
    assert.ok(auth.calls <= 50, `${auth.calls} guesses from one address reached the backend`);
    assert.equal(answers.filter((answer) => answer.statusCode === 429).length, 120 - auth.calls);
    for (const answer of answers.filter((answer) => answer.statusCode === 429)) {
      assert.ok(Number(answer.headers['retry-after']) <= 900);
    }
    // Another address is not held back by it.
    assert.equal((await attempt('burst0', PASSWORD, '198.51.100.100')).statusCode, 200);
  });

  test('an IPv6 client is counted by its /64: rotating addresses in it does not escape the limit', async () => {
    for (let i = 1; i <= 50; i++) {
      const answer = await attempt(`v6user${i}`, 'wrong', `2001:db8:1:2::${i.toString(16)}`);
      assert.equal(answer.statusCode, 403);
    }
    const same = await attempt('someone', PASSWORD, '2001:db8:1:2:ffff:ffff:ffff:ffff');
    assert.equal(same.statusCode, 429, 'another address of the same /64 is the same client');
    assert.equal(
      (await attempt('someone', PASSWORD, '2001:db8:1:3::1')).statusCode,
      200,
      'the next /64 is not',
    );
  });

  // A test the suite once lacked: break the client address on purpose and every test stayed green.
  test('without TRUST_PROXY, X-Forwarded-For is ignored by the per-IP count, the audit line and the session list', async () => {
    const forwarded = (username: string, password: string) =>
      t.fastify.inject({
        method: 'POST',
        url: '/api/auth/login',
        remoteAddress: '198.51.100.7',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.250' },
        payload: JSON.stringify({ username, password }),
      });
    assert.equal((await forwarded('erin', 'wrong')).statusCode, 403);
    const byPeer = await t.stores.throttle.recentFailures('ip:198.51.100.7', 50, t.clock.now, 900_000);
    const byHeader = await t.stores.throttle.recentFailures('ip:203.0.113.250', 50, t.clock.now, 900_000);
    assert.deepEqual([byPeer.length, byHeader.length], [1, 0]);
    const login = await forwarded('erin', PASSWORD);
    assert.equal(login.statusCode, 200);
    const audits = t.logs.map((line) => JSON.parse(line)).filter((entry) => entry.audit === 'login');
    assert.deepEqual(
      audits.map((entry) => entry.clientIp),
      ['198.51.100.7', '198.51.100.7'],
    );
    const sessions = await t.stores.sessions.list('erin', t.clock.now);
    assert.deepEqual(
      sessions.map((session) => session.clientIp),
      ['198.51.100.7'],
    );
  });

  // SQLite only: it reads the table itself (store/contract.test.ts proves the same of every store).
  if (store.kind === 'sqlite') {
    test('the password is never stored, only a keyed hash', async () => {
      await attempt('alice', 'very-secret-guess');
      const db = sqliteDb(t.stores);
      const dump = JSON.stringify(db.prepare('SELECT * FROM throttle_failures').all());
      assert.ok(dump.includes('u:alice'));
      assert.ok(!dump.includes('very-secret-guess'));
    });
  }
});

describeEachStore('ALLOW_NEW_USERS=false', (store) => {
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

describeEachStore('throttle limits are settings', (store) => {
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
