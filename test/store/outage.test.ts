// Contract §2: when the session store cannot answer, endpoints that need it say 503 with Retry-After,
// never 500 and never a silent logged-out state; requests without a session cookie are unaffected.
// Here the session store's methods fail and SQLite is locked by another process; the servers
// stopped and started: store/outage-restart; faults on the wire: store/outage-proxy.
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { sqlitePath } from '../../src/config/stores/settings.ts';
import { StoreUnavailableError } from '../../src/store/errors.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';

const UNAVAILABLE = { detail: 'Service temporarily unavailable.' };

// SQLite only: it locks the file (startTestApp's default store).
describe('SQLite locked by another process (a real SQLITE_BUSY)', () => {
  let t: TestApp;
  let other: DatabaseSync;
  before(async () => {
    t = await startTestApp({
      authenticator: fakeAuthenticator({ alice: 'pw' }),
      env: { SQLITE_BUSY_TIMEOUT_MS: '200' },
    });
    other = new DatabaseSync(sqlitePath(t.config.databaseUrl));
  });
  after(async () => {
    if (other.isOpen) other.close();
    await t.close();
  });

  test('a login that cannot write its session answers 503 + Retry-After, then works once the lock is gone', async () => {
    other.exec('BEGIN EXCLUSIVE');
    try {
      const { response } = await loginAs(t.fastify, 'alice', 'pw');
      assert.equal(response.statusCode, 503);
      assert.deepEqual(response.json(), UNAVAILABLE);
      assert.equal(response.headers['retry-after'], '5');
      assert.equal(response.headers['set-cookie'], undefined);
    } finally {
      other.exec('ROLLBACK');
    }
    const { response } = await loginAs(t.fastify, 'alice', 'pw');
    assert.equal(response.statusCode, 200);
  });
});

// The failure is the test's, put in front of the SessionStore interface: what is proved is how the
// HTTP layer answers StoreUnavailableError, the same whatever store is behind it (each server's own
// failures: store/outage-proxy and store/outage-restart). Once, on SQLite.
describe('session store failing (every method throws StoreUnavailableError)', () => {
  let t: TestApp;
  let cookie: string;
  let failing = false;
  before(async () => {
    t = await startTestApp({ authenticator: fakeAuthenticator({ alice: 'pw' }) });
    ({ cookie } = await loginAs(t.fastify, 'alice', 'pw'));
    const sessions = t.stores.sessions as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    for (const name of Object.keys(sessions)) {
      const original = sessions[name]!;
      sessions[name] = (...args) =>
        failing ? Promise.reject(new StoreUnavailableError('sessions')) : original(...args);
    }
    failing = true;
  });
  after(() => t.close());

  for (const [method, url] of [
    ['GET', '/api/auth/check'],
    ['GET', '/api/group/'],
    ['GET', '/api/group/1'],
    ['POST', '/api/auth/logout'],
  ] as const) {
    test(`${method} ${url} with a session cookie answers 503 + Retry-After`, async () => {
      const response = await t.fastify.inject({ method, url, headers: { cookie } });
      assert.equal(response.statusCode, 503);
      assert.deepEqual(response.json(), UNAVAILABLE);
      assert.equal(response.headers['retry-after'], '5');
      assert.equal(response.headers['x-frame-options'], 'SAMEORIGIN');
    });
  }

  test('requests without a session cookie never touch the store', async () => {
    const check = await t.fastify.inject({ url: '/api/auth/check' });
    assert.equal(check.statusCode, 403);
    assert.equal(check.body, '""');
    const logout = await t.fastify.inject({ method: 'POST', url: '/api/auth/logout' });
    assert.equal(logout.statusCode, 200);
    const groups = await t.fastify.inject({ url: '/api/group/' });
    assert.equal(groups.statusCode, 403);
  });

  test('the outage is logged as a warning without the cookie', async () => {
    const text = t.logs.join('\n');
    assert.match(text, /store unavailable/);
    assert.ok(!text.includes(cookie.split(';')[0]!.split('=')[1]!));
  });
});
