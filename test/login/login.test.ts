// Contract §2, §3: check, login and logout, with a counting fake authenticator (IMAP itself is
// covered against a real Dovecot in imap/login.test.ts).
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { hashSessionId } from '../../src/auth/sessions.ts';
import { fakeAuthenticator, loginAs, setCookies, startTestApp, type TestApp } from '../helpers/app.ts';
import { sqliteDb } from '../helpers/engines.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PASSWORDS = { alice: 'alice-pw', bob: 'bob-pw', ünïcode: 'pw', 'Mixed.Case': 'pw' };
const json = { 'content-type': 'application/json' };

// The request and the answer: cookies and their attributes, body parsing and validation, refusals
// before any backend or store, the audit line. HTTP mechanics, the same on every store: once.
describe('login requests and answers (contract §2)', () => {
  let t: TestApp;
  let fake: ReturnType<typeof fakeAuthenticator>;
  before(async () => {
    fake = fakeAuthenticator(PASSWORDS);
    t = await startTestApp({ authenticator: fake });
  });
  after(() => t.close());
  beforeEach(async () => {
    fake.calls = 0;
    // Each test starts without throttle counters.
    for (const key of ['u:alice', 'u:bob', 'ip:127.0.0.1']) await t.stores.throttle.clear(key);
  });

  test('check without a session answers 403 ""', async () => {
    const response = await t.fastify.inject({
      url: '/api/auth/check',
      headers: { accept: 'application/json, text/javascript' },
    });
    assert.equal(response.statusCode, 403);
    assert.equal(response.body, '""');
    assert.equal(response.headers['allow'], 'GET, HEAD, OPTIONS');
  });

  test('login answers 200 "alice" and sets both cookies with the contract attributes', async () => {
    const before = Date.now();
    const { response } = await loginAs(t.fastify, 'alice', 'alice-pw');
    assert.equal(response.statusCode, 200);
    assert.equal(response.body, '"alice"');
    assert.match(String(response.headers['content-type']), /^application\/json/);
    assert.equal(response.headers['allow'], 'POST, OPTIONS');
    const lines = response.headers['set-cookie'] as string[];
    assert.equal(lines.length, 2);
    assert.match(lines[0] ?? '', /^csrftoken=/, 'csrftoken first, as in the seed');
    const cookies = setCookies(response);
    const csrf = cookies.get('csrftoken');
    const session = cookies.get('sessionid');
    assert.ok(csrf && session);
    assert.match(csrf.value, /^[A-Za-z0-9]{32}$/);
    assert.match(session.value, /^[a-z0-9]{32}$/);
    const attributes = (raw: string) => raw.split('; ').slice(1);
    const sessionAttrs = attributes(session.raw);
    assert.ok(sessionAttrs.includes('HttpOnly'));
    assert.ok(sessionAttrs.includes('Max-Age=1209600'));
    assert.ok(sessionAttrs.includes('Path=/'));
    assert.ok(sessionAttrs.includes('SameSite=Lax'));
    assert.ok(!sessionAttrs.includes('Secure'));
    const expires = Date.parse(sessionAttrs.find((a) => a.startsWith('Expires='))?.slice(8) ?? '');
    assert.ok(Math.abs(expires - (before + 1_209_600_000)) < 5000, 'Expires is the same instant as Max-Age');
    const csrfAttrs = attributes(csrf.raw);
    assert.ok(csrfAttrs.includes('Max-Age=31449600'));
    assert.ok(csrfAttrs.includes('Path=/'));
    assert.ok(csrfAttrs.includes('SameSite=Lax'));
    assert.ok(!csrfAttrs.includes('HttpOnly'), 'scripts read csrftoken');
    const csrfExpires = Date.parse(csrfAttrs.find((a) => a.startsWith('Expires='))?.slice(8) ?? '');
    assert.ok(Math.abs(csrfExpires - (before + 31_449_600_000)) < 5000);
  });

  // It reads SQLite's table itself (store/contract.test.ts proves the same of every store).
  test('the session store keeps only the SHA-256 of the id', async () => {
    const { sessionid } = await loginAs(t.fastify, 'alice', 'alice-pw');
    const db = sqliteDb(t.stores);
    const rows = db.prepare('SELECT id_hash FROM sessions').all();
    const stored = rows.map((row) => Buffer.from(row['id_hash'] as Uint8Array).toString('hex'));
    assert.ok(stored.includes(hashSessionId(sessionid).toString('hex')));
    const dump = JSON.stringify(db.prepare('SELECT * FROM sessions').all(), (_k, v) =>
      v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v,
    );
    assert.ok(!dump.includes(sessionid), 'the raw id is nowhere in the table');
  });

  test('a wrong password answers 403 "Cannot log you in" and sets no cookie', async () => {
    const { response } = await loginAs(t.fastify, 'alice', 'wrong');
    assert.equal(response.statusCode, 403);
    assert.deepEqual(response.json(), { detail: 'Cannot log you in' });
    assert.equal(response.headers['set-cookie'], undefined);
  });

  test('form bodies are accepted like JSON; a repeated key counts by its last value', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const response = await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: form,
      payload: 'username=bob&password=bob-pw',
    });
    assert.equal(response.statusCode, 200);
    assert.equal(response.body, '"bob"');
    const repeated = await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: form,
      payload: 'username=x&username=bob&password=bob-pw',
    });
    assert.equal(repeated.body, '"bob"');
    const blank = await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: form,
      payload: 'username=&password=',
    });
    assert.equal(blank.statusCode, 400);
  });

  test('field validation answers 400 with DRF-style field errors', async () => {
    const cases: [unknown, Record<string, string[]>][] = [
      [{}, { username: ['This field is required.'], password: ['This field is required.'] }],
      [
        { username: '', password: '' },
        { username: ['This field may not be blank.'], password: ['This field may not be blank.'] },
      ],
      [{ username: '   ', password: 'x' }, { username: ['This field may not be blank.'] }],
      [{ username: null, password: 'x' }, { username: ['This field may not be null.'] }],
      [
        { username: 5, password: ['x'] },
        { username: ['Not a valid string.'], password: ['Not a valid string.'] },
      ],
      [
        { username: 'a'.repeat(151), password: 'x' },
        { username: ['Ensure this field has no more than 150 characters.'] },
      ],
      [
        { username: 'alice', password: 'é'.repeat(1025) },
        { password: ['Ensure this field has no more than 1024 characters.'] },
      ],
    ];
    for (const [body, expected] of cases) {
      const response = await t.fastify.inject({
        method: 'POST',
        url: '/api/auth/login',
        headers: json,
        payload: JSON.stringify(body),
      });
      assert.equal(response.statusCode, 400, JSON.stringify(body));
      assert.deepEqual(response.json(), expected);
    }
    assert.equal(fake.calls, 0, 'IMAP is not contacted for invalid input');
  });

  test('lengths count code points, after trimming the username', async () => {
    const response = await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: json,
      payload: JSON.stringify({ username: ` ${'a'.repeat(150)} `, password: '😀'.repeat(1024) }),
    });
    assert.equal(response.statusCode, 403, '150 and 1024 code points are allowed');
  });

  test('malformed JSON, non-object JSON and other media types', async () => {
    const bad = await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: json,
      payload: '{"username": ',
    });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().detail, /^JSON parse error - .+/);
    for (const payload of ['[]', '"alice"', '42', 'null']) {
      const response = await t.fastify.inject({
        method: 'POST',
        url: '/api/auth/login',
        headers: json,
        payload,
      });
      assert.equal(response.statusCode, 400, payload);
      assert.deepEqual(response.json(), { detail: 'Invalid data. Expected a dictionary.' });
    }
    const text = await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { 'content-type': 'text/plain' },
      payload: 'username=alice',
    });
    assert.equal(text.statusCode, 415);
    assert.deepEqual(text.json(), { detail: 'Unsupported media type "text/plain" in request.' });
    const proto = await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: json,
      payload: '{"__proto__": {"x": 1}, "username": "alice", "password": "alice-pw"}',
    });
    assert.equal(proto.statusCode, 400);
    assert.equal(fake.calls, 0);
  });

  test('white space or control characters are refused with 403 without contacting IMAP', async () => {
    const cases = [
      { username: 'al ice', password: 'alice-pw' },
      { username: 'al\u0000ice', password: 'alice-pw' },
      { username: 'alice\u007f', password: 'alice-pw' },
      { username: 'alice', password: 'pw\r\nA1 LOGOUT' },
      { username: 'alice', password: 'pw\u0000' },
      { username: 'a\u00a0b', password: 'x' },
    ];
    for (const body of cases) {
      const response = await t.fastify.inject({
        method: 'POST',
        url: '/api/auth/login',
        headers: json,
        payload: JSON.stringify(body),
      });
      assert.equal(response.statusCode, 403, JSON.stringify(body));
      assert.deepEqual(response.json(), { detail: 'Cannot log you in' });
    }
    assert.equal(fake.calls, 0);
  });

  test('a cookie that cannot be a session id never reaches the store', async () => {
    const original = t.stores.sessions.get;
    let lookups = 0;
    t.stores.sessions.get = async (...args) => {
      lookups++;
      return original(...args);
    };
    try {
      for (const cookie of ['', 'sessionid=', 'sessionid=short', `sessionid=${'A'.repeat(32)}`, 'other=1']) {
        const response = await t.fastify.inject({
          url: '/api/auth/check',
          headers: cookie === '' ? {} : { cookie },
        });
        assert.equal(response.statusCode, 403);
      }
      assert.equal(lookups, 0);
    } finally {
      t.stores.sessions.get = original;
    }
  });

  test('each login writes one audit line; no password, session id or CSRF token is logged', async () => {
    const before = t.logs.length;
    const ok = await loginAs(t.fastify, 'alice', 'alice-pw');
    await loginAs(t.fastify, 'alice', 'not-the-password');
    await t.fastify.inject({
      url: '/api/auth/check',
      headers: { cookie: ok.cookie, 'x-csrftoken': ok.csrftoken },
    });
    await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/logout',
      headers: { cookie: ok.cookie, 'x-csrftoken': ok.csrftoken },
    });
    const lines = t.logs.slice(before);
    const audits = lines.map((line) => JSON.parse(line)).filter((entry) => entry.audit === 'login');
    assert.equal(audits.length, 2);
    assert.deepEqual(
      audits.map((a) => [a.username, a.clientIp, a.outcome, a.failure]),
      [
        ['alice', '127.0.0.1', 'success', undefined],
        ['alice', '127.0.0.1', 'failure', 'bad_credentials'],
      ],
    );
    const text = lines.join('\n');
    for (const secret of ['alice-pw', 'not-the-password', ok.sessionid, ok.csrftoken]) {
      assert.ok(!text.includes(secret), `a log line contains ${secret.slice(0, 4)}…`);
    }
  });
});

// What the session and user stores do: a session ended, replaced, revoked with its user; one user
// per canonical name. On every store.
describeEachStore('login, check, logout', (store) => {
  let t: TestApp;
  let fake: ReturnType<typeof fakeAuthenticator>;
  before(async () => {
    fake = fakeAuthenticator(PASSWORDS);
    t = await startTestApp({ store, authenticator: fake });
  });
  after(() => t.close());
  beforeEach(async () => {
    fake.calls = 0;
    // Each test starts without throttle counters.
    for (const key of ['u:alice', 'u:bob', 'ip:127.0.0.1']) await t.stores.throttle.clear(key);
  });

  test('check with the session answers 200 and the username; logout ends it everywhere', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'alice-pw');
    const check = await t.fastify.inject({ url: '/api/auth/check', headers: { cookie } });
    assert.equal(check.statusCode, 200);
    assert.equal(check.body, '"alice"');
    const logout = await t.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } });
    assert.equal(logout.statusCode, 200);
    assert.equal(logout.body, '""');
    assert.match(String(logout.headers['content-type']), /^application\/json/);
    assert.equal(logout.headers['allow'], 'POST, OPTIONS');
    assert.equal(logout.headers['clear-site-data'], '"cookies"');
    const cleared = String(logout.headers['set-cookie']);
    assert.match(cleared, /^sessionid=""; /);
    assert.ok(cleared.split('; ').includes('Max-Age=0'));
    assert.ok(cleared.split('; ').includes('Path=/'));
    const again = await t.fastify.inject({ url: '/api/auth/check', headers: { cookie } });
    assert.equal(again.statusCode, 403, 'the old cookie no longer works');
    assert.equal(again.body, '""');
  });

  test('logout without a session is still 200 (idempotent)', async () => {
    for (const headers of [
      {},
      { cookie: 'sessionid=zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz' },
      { cookie: 'sessionid=junk' },
    ]) {
      const response = await t.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers });
      assert.equal(response.statusCode, 200);
      assert.equal(response.body, '""');
    }
  });

  test('login always mints a new session and invalidates the one sent along', async () => {
    const first = await loginAs(t.fastify, 'alice', 'alice-pw');
    const second = await loginAs(t.fastify, 'alice', 'alice-pw', { cookie: first.cookie });
    assert.notEqual(second.sessionid, first.sessionid);
    assert.notEqual(second.csrftoken, first.csrftoken);
    const old = await t.fastify.inject({ url: '/api/auth/check', headers: { cookie: first.cookie } });
    assert.equal(old.statusCode, 403);
    const fresh = await t.fastify.inject({ url: '/api/auth/check', headers: { cookie: second.cookie } });
    assert.equal(fresh.body, '"alice"');
  });

  test('usernames are trimmed and compared case-insensitively; the canonical form is answered', async () => {
    for (const sent of ['ALICE', '  Alice\t\n', 'aLiCe']) {
      const { response, cookie } = await loginAs(t.fastify, sent, 'alice-pw');
      assert.equal(response.statusCode, 200, JSON.stringify(sent));
      assert.equal(response.body, '"alice"');
      const check = await t.fastify.inject({ url: '/api/auth/check', headers: { cookie } });
      assert.equal(check.body, '"alice"');
    }
    const users = await t.stores.users.list();
    assert.deepEqual(
      users.filter((u) => u.username.toLowerCase() === 'alice').map((u) => u.username),
      ['alice'],
    );
  });

  test('a disabled user is refused and their sessions die at once; re-enabling revives nothing', async () => {
    const first = await loginAs(t.fastify, 'bob', 'bob-pw');
    const second = await loginAs(t.fastify, 'bob', 'bob-pw');
    const { disableUser, enableUser } = await import('../../src/auth/users.ts');
    const live = await t.stores.sessions.countUser('bob', Date.now());
    assert.ok(live >= 2);
    assert.deepEqual(await disableUser(t.stores, 'bob'), { revoked: live });
    assert.equal(await t.stores.sessions.countUser('bob', Date.now()), 0);
    for (const { cookie } of [first, second]) {
      const check = await t.fastify.inject({ url: '/api/auth/check', headers: { cookie } });
      assert.equal(check.statusCode, 403);
      const groups = await t.fastify.inject({ url: '/api/group/', headers: { cookie } });
      assert.equal(groups.statusCode, 403);
    }
    const calls = fake.calls;
    const refused = await loginAs(t.fastify, 'bob', 'bob-pw');
    assert.equal(refused.response.statusCode, 403);
    assert.deepEqual(refused.response.json(), { detail: 'Cannot log you in' });
    assert.equal(fake.calls, calls, 'a disabled user does not reach IMAP');
    await enableUser(t.stores, 'bob');
    const stillDead = await t.fastify.inject({ url: '/api/auth/check', headers: { cookie: first.cookie } });
    assert.equal(stillDead.statusCode, 403);
    const back = await loginAs(t.fastify, 'bob', 'bob-pw');
    assert.equal(back.response.statusCode, 200);
  });
});

// Cookie attributes decided from the settings and the request: once.
describe('Secure cookies', () => {
  test('COOKIE_SECURE=true adds Secure to both cookies and to the cleared one', async () => {
    const t = await startTestApp({
      authenticator: fakeAuthenticator(PASSWORDS),
      env: { COOKIE_SECURE: 'true' },
    });
    try {
      const { response, cookie } = await loginAs(t.fastify, 'alice', 'alice-pw');
      for (const { raw } of setCookies(response).values()) assert.ok(raw.split('; ').includes('Secure'), raw);
      const logout = await t.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } });
      assert.ok(String(logout.headers['set-cookie']).split('; ').includes('Secure'));
    } finally {
      await t.close();
    }
  });

  test('TLS reported by a trusted proxy makes cookies Secure; from an untrusted peer it does not', async () => {
    const t = await startTestApp({
      authenticator: fakeAuthenticator(PASSWORDS),
      env: { TRUST_PROXY: '1' },
    });
    const u = await startTestApp({ authenticator: fakeAuthenticator(PASSWORDS) });
    try {
      const proxied = await loginAs(t.fastify, 'alice', 'alice-pw', { 'x-forwarded-proto': 'https' });
      for (const { raw } of setCookies(proxied.response).values()) assert.ok(raw.includes('; Secure'), raw);
      const direct = await loginAs(u.fastify, 'alice', 'alice-pw', { 'x-forwarded-proto': 'https' });
      for (const { raw } of setCookies(direct.response).values()) assert.ok(!raw.includes('Secure'), raw);
    } finally {
      await t.close();
      await u.close();
    }
  });
});

// Whether the user exists is the user store's answer: on every store.
describeEachStore('ALLOW_NEW_USERS=false', (store) => {
  test('admits only users that already exist', async () => {
    const fake = fakeAuthenticator(PASSWORDS);
    const t = await startTestApp({ store, authenticator: fake, env: { ALLOW_NEW_USERS: 'false' } });
    try {
      const stranger = await loginAs(t.fastify, 'alice', 'alice-pw');
      assert.equal(stranger.response.statusCode, 403);
      assert.equal(fake.calls, 0);
      await t.stores.groups.importData({
        groups: [],
        users: [{ username: 'alice', active: true }],
        memberships: [],
      });
      const known = await loginAs(t.fastify, 'alice', 'alice-pw');
      assert.equal(known.response.statusCode, 200);
    } finally {
      await t.close();
    }
  });
});

// The name answered is the canonical form of the one sent, decided before any store (one user per
// name on every store: login/identity): once.
describe('USERNAME_CASE=preserve', () => {
  test('keeps the case as sent', async () => {
    const t = await startTestApp({
      authenticator: fakeAuthenticator(PASSWORDS),
      env: { USERNAME_CASE: 'preserve' },
    });
    try {
      const { response } = await loginAs(t.fastify, ' Mixed.Case ', 'pw');
      assert.equal(response.body, '"Mixed.Case"');
    } finally {
      await t.close();
    }
  });
});
