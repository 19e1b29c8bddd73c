// Contract §9: a user's own sessions through the API — the list, ending one by its handle, logging
// out everywhere, the cap of 100, last_seen — with §1 and §7 applied to the three endpoints. Runs on
// every store.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { FLUSH_INTERVAL_MS, RECORD_INTERVAL_MS } from '../../src/auth/last-seen.ts';
import { fakeAuthenticator, loginAs, setCookies, startTestApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PASSWORDS = { alice: 'alice-pw', bob: 'bob-pw', carol: 'carol-pw' };
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';
const PHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1';
const ISO_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

interface View {
  id: string;
  created: string;
  last_seen: string;
  ip: string | null;
  user_agent: string | null;
  method: string | null;
  current: boolean;
}

describeEachStore('my sessions (contract §9)', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      store,
      authenticator: fakeAuthenticator(PASSWORDS),
      env: { TRUST_PROXY: 'true' },
      fixedClock: true,
    });
  });
  after(() => t.close());

  const login = async (username: keyof typeof PASSWORDS, userAgent: string, ip: string) => {
    const session = await loginAs(t.fastify, username, PASSWORDS[username], {
      'user-agent': userAgent,
      'x-forwarded-for': ip,
    });
    assert.equal(session.response.statusCode, 200);
    return session;
  };
  const list = async (cookie: string) => {
    const response = await t.fastify.inject({ url: '/api/auth/sessions', headers: { cookie } });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as View[];
  };
  const end = (cookie: string, id: string, headers: Record<string, string> = {}) =>
    t.fastify.inject({ method: 'DELETE', url: `/api/auth/sessions/${id}`, headers: { cookie, ...headers } });
  const everywhere = (cookie: string, headers: Record<string, string> = {}) =>
    t.fastify.inject({ method: 'POST', url: '/api/auth/logout-everywhere', headers: { cookie, ...headers } });
  const check = async (cookie: string) =>
    (await t.fastify.inject({ url: '/api/auth/check', headers: { cookie } })).statusCode;
  const revokeAll = async () => {
    for (const name of Object.keys(PASSWORDS)) await t.stores.sessions.revokeUser(name);
  };

  test('the list: newest first, where each started, which is this one; nothing of anyone else', async () => {
    await revokeAll();
    const laptop = await login('alice', FIREFOX, '192.0.2.10');
    t.clock.advance(60_000);
    const phone = await login('alice', PHONE, '2001:db8::7');
    await login('bob', FIREFOX, '198.51.100.1');
    const views = await list(laptop.cookie);
    assert.equal(views.length, 2);
    const [newest, oldest] = views as [View, View];
    const iso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
    assert.deepEqual(
      { ...newest, id: undefined },
      {
        id: undefined,
        created: iso(t.clock.now),
        last_seen: iso(t.clock.now),
        ip: '2001:db8::7',
        user_agent: PHONE,
        method: 'password',
        current: false,
      },
    );
    assert.deepEqual(
      { ...oldest, id: undefined },
      {
        id: undefined,
        created: iso(t.clock.now - 60_000),
        last_seen: iso(t.clock.now - 60_000),
        ip: '192.0.2.10',
        user_agent: FIREFOX,
        method: 'password',
        current: true,
      },
    );
    for (const view of views) {
      assert.match(view.created, ISO_SECONDS);
      assert.match(view.id, /^[0-9a-f]{32}$/);
    }
    // The other device sees the same handles, with itself as current.
    const fromPhone = await list(phone.cookie);
    assert.deepEqual(
      fromPhone.map((v) => [v.id, v.current]),
      [
        [newest.id, true],
        [oldest.id, false],
      ],
    );
  });

  test('a handle reveals neither the session id nor its hash', async () => {
    await revokeAll();
    const { cookie, sessionid } = await login('alice', FIREFOX, '192.0.2.10');
    const [view] = (await list(cookie)) as [View];
    const hash = createHash('sha256').update(sessionid).digest();
    for (const secret of [
      sessionid,
      hash.toString('hex'),
      hash.toString('base64'),
      hash.toString('base64url'),
    ]) {
      assert.ok(!secret.includes(view.id) && !view.id.includes(secret.slice(0, 16)), 'no part of it');
    }
    assert.ok(!JSON.stringify(await list(cookie)).includes(sessionid));
  });

  test('the user agent is kept cut at 256 characters, never half a character', async () => {
    await revokeAll();
    const long = `Mozilla/5.0 ${'🙂'.repeat(300)}`;
    const { cookie } = await login('alice', long, '192.0.2.10');
    const [view] = (await list(cookie)) as [View];
    assert.equal(view.user_agent, Array.from(long).slice(0, 256).join(''));
    const bare = await loginAs(t.fastify, 'carol', PASSWORDS.carol, { 'user-agent': '' });
    const [none] = (await list(bare.cookie)) as [View];
    assert.equal(none.user_agent, null, 'an empty User-Agent: null');
    assert.equal(none.ip, '127.0.0.1');
  });

  test('ending another session: 204 without a body, gone on its very next request, mine untouched', async () => {
    await revokeAll();
    const laptop = await login('alice', FIREFOX, '192.0.2.10');
    const phone = await login('alice', PHONE, '192.0.2.11');
    assert.equal(await check(phone.cookie), 200);
    const other = (await list(laptop.cookie)).find((v) => !v.current)!;
    const response = await end(laptop.cookie, other.id);
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, '');
    assert.equal(response.headers['set-cookie'], undefined, 'my cookie stays');
    assert.equal(response.headers['allow'], 'DELETE, OPTIONS');
    assert.equal(response.headers['cache-control'], 'no-store');
    assert.equal(await check(phone.cookie), 403);
    assert.equal(await check(laptop.cookie), 200);
    assert.deepEqual(
      (await list(laptop.cookie)).map((v) => v.current),
      [true],
    );
    const again = await end(laptop.cookie, other.id);
    assert.equal(again.statusCode, 404, 'ended already');
    assert.deepEqual(again.json(), { detail: 'Not found.' });
  });

  test('ending the current session clears the cookie as logout does', async () => {
    await revokeAll();
    const { cookie } = await login('alice', FIREFOX, '192.0.2.10');
    const [mine] = (await list(cookie)) as [View];
    const response = await end(cookie, `${mine.id}/`);
    assert.equal(response.statusCode, 204);
    assert.match(String(setCookies(response).get('sessionid')?.raw), /^sessionid=""; .*Max-Age=0/);
    assert.equal(response.headers['clear-site-data'], '"cookies"');
    assert.equal(await check(cookie), 403);
  });

  test("another user's handle, and any made-up one, is 404 and ends nothing", async () => {
    await revokeAll();
    const alice = await login('alice', FIREFOX, '192.0.2.10');
    const bob = await login('bob', FIREFOX, '192.0.2.20');
    const [bobs] = (await list(bob.cookie)) as [View];
    const made = [
      bobs.id,
      bobs.id.toUpperCase(),
      '0'.repeat(32),
      'x',
      'a'.repeat(5000),
      '%00',
      encodeURIComponent('é'),
      bob.sessionid,
      createHash('sha256').update(bob.sessionid).digest('hex'),
    ];
    for (const id of made) {
      const response = await end(alice.cookie, id);
      assert.equal(response.statusCode, 404, id);
      assert.deepEqual(response.json(), { detail: 'Not found.' });
    }
    assert.equal(await check(bob.cookie), 200);
    assert.equal(await check(alice.cookie), 200);
  });

  test('logout everywhere ends every session of mine, this one included, and answers like logout', async () => {
    await revokeAll();
    const a1 = await login('alice', FIREFOX, '192.0.2.10');
    const a2 = await login('alice', PHONE, '192.0.2.11');
    const bob = await login('bob', FIREFOX, '192.0.2.20');
    const response = await everywhere(a1.cookie);
    assert.equal(response.statusCode, 200);
    assert.equal(response.body, '""');
    assert.equal(response.headers['allow'], 'POST, OPTIONS');
    assert.equal(response.headers['clear-site-data'], '"cookies"');
    assert.match(String(setCookies(response).get('sessionid')?.raw), /^sessionid=""; .*Max-Age=0/);
    assert.equal(await check(a1.cookie), 403);
    assert.equal(await check(a2.cookie), 403);
    assert.equal(await check(bob.cookie), 200, "nobody else's");
  });

  test('without a live session: 403 with the contract detail on all three', async () => {
    const gone = 'sessionid=abcdefghijklmnopqrstuvwxyz012345';
    for (const response of [
      await t.fastify.inject({ url: '/api/auth/sessions' }),
      await t.fastify.inject({ url: '/api/auth/sessions', headers: { cookie: gone } }),
      await end(gone, '0'.repeat(32)),
      await everywhere(gone),
      await t.fastify.inject({ method: 'POST', url: '/api/auth/logout-everywhere' }),
    ]) {
      assert.equal(response.statusCode, 403);
      assert.deepEqual(response.json(), { detail: 'Authentication credentials were not provided.' });
    }
  });

  test('§7: a cross-origin DELETE or POST, or a wrong X-CSRFToken, is refused and ends nothing', async () => {
    await revokeAll();
    const a1 = await login('alice', FIREFOX, '192.0.2.10');
    const a2 = await login('alice', PHONE, '192.0.2.11');
    const other = (await list(a1.cookie)).find((v) => !v.current)!;
    const crossSite = { origin: 'https://evil.example', host: 'localhost:80' };
    const origin = { detail: 'CSRF Failed: Origin checking failed.' };
    const token = { detail: 'CSRF Failed: CSRF token incorrect.' };
    for (const [response, body] of [
      [await end(a1.cookie, other.id, crossSite), origin],
      [await end(a1.cookie, other.id, { 'sec-fetch-site': 'cross-site' }), origin],
      [await end(a1.cookie, other.id, { 'x-csrftoken': 'A'.repeat(32) }), token],
      [await everywhere(a1.cookie, crossSite), origin],
      [await everywhere(a1.cookie, { 'sec-fetch-site': 'same-site' }), origin],
      [await everywhere(a1.cookie, { 'x-csrftoken': 'A'.repeat(32) }), token],
    ] as const) {
      assert.equal(response.statusCode, 403);
      assert.deepEqual(response.json(), body);
    }
    assert.equal(await check(a1.cookie), 200);
    assert.equal(await check(a2.cookie), 200);
    const sameOrigin = await end(a1.cookie, other.id, {
      'sec-fetch-site': 'same-origin',
      'x-csrftoken': a1.csrftoken,
    });
    assert.equal(sameOrigin.statusCode, 204);
  });

  test('§1: Allow, OPTIONS, HEAD and 405 on the three endpoints, with or without a trailing slash', async () => {
    const cases = [
      { url: '/api/auth/sessions', allow: 'GET, HEAD, OPTIONS', name: 'Session List' },
      {
        url: '/api/auth/sessions/0123456789abcdef0123456789abcdef',
        allow: 'DELETE, OPTIONS',
        name: 'Session',
      },
      { url: '/api/auth/logout-everywhere', allow: 'POST, OPTIONS', name: 'Logout Everywhere' },
    ];
    for (const { url, allow, name } of cases) {
      for (const path of [url, `${url}/`]) {
        const options = await t.fastify.inject({ method: 'OPTIONS', url: path });
        assert.equal(options.statusCode, 200, path);
        assert.equal(options.headers['allow'], allow);
        assert.deepEqual(options.json(), { name, methods: allow.split(', ') });
        assert.equal(options.headers['x-frame-options'], 'SAMEORIGIN');
        for (const method of [
          'PUT',
          'PATCH',
          ...(allow.includes('GET') ? ['POST', 'DELETE'] : ['GET']),
        ] as const) {
          const refused = await t.fastify.inject({ method, url: path });
          assert.equal(refused.statusCode, 405, `${method} ${path}`);
          assert.equal(refused.headers['allow'], allow);
          assert.deepEqual(refused.json(), { detail: `Method "${method}" not allowed.` });
        }
      }
    }
    const { cookie } = await login('alice', FIREFOX, '192.0.2.10');
    const get = await t.fastify.inject({ url: '/api/auth/sessions', headers: { cookie } });
    const head = await t.fastify.inject({ method: 'HEAD', url: '/api/auth/sessions', headers: { cookie } });
    assert.equal(head.statusCode, 200);
    assert.equal(head.body, '');
    assert.equal(head.headers['content-length'], get.headers['content-length']);
    assert.equal(head.headers['allow'], 'GET, HEAD, OPTIONS');
    assert.equal(get.headers['cache-control'], 'no-store');
    assert.match(String(get.headers['content-type']), /^application\/json/);
  });

  test('the 101st login ends the oldest session; the list holds 100', async () => {
    await revokeAll();
    const first = await login('alice', FIREFOX, '192.0.2.1');
    let last = first;
    for (let i = 1; i <= 100; i++) {
      t.clock.advance(1000);
      last = await login('alice', FIREFOX, `192.0.2.${(i % 250) + 1}`);
    }
    assert.equal(await check(first.cookie), 403, 'the oldest ended');
    const views = await list(last.cookie);
    assert.equal(views.length, 100);
    assert.equal(views[0]?.current, true, 'the newest first');
    assert.equal(await t.stores.sessions.countUser('alice', t.clock.now), 100);
  });

  test('last_seen: within 10 minutes, written at most once per session per interval, off the request', async () => {
    await revokeAll();
    const { cookie } = await login('alice', FIREFOX, '192.0.2.10');
    const started = t.clock.now;
    const writes: number[] = [];
    const touch = t.stores.sessions.touch.bind(t.stores.sessions);
    t.stores.sessions.touch = async (sightings) => {
      writes.push(sightings.length);
      return touch(sightings);
    };
    try {
      const seenAt = async () => Date.parse((await list(cookie))[0]!.last_seen);
      // Right after login: seen when created, nothing to write.
      await check(cookie);
      await t.sessions.flushLastSeen();
      assert.deepEqual(writes, []);
      t.clock.advance(RECORD_INTERVAL_MS + 1000);
      for (let i = 0; i < 50; i++) await check(cookie);
      assert.deepEqual(writes, [], 'no request waits for a write');
      const seen = t.clock.now;
      assert.equal(await seenAt(), Math.floor(seen / 1000) * 1000, 'shown before it is written');
      await t.sessions.flushLastSeen();
      assert.deepEqual(writes, [1], 'one write for 50 requests');
      t.clock.advance(RECORD_INTERVAL_MS - 2000);
      for (let i = 0; i < 20; i++) await check(cookie);
      await t.sessions.flushLastSeen();
      assert.deepEqual(writes, [1], 'still within the interval');
      const shown = await seenAt();
      assert.ok(t.clock.now - shown <= 10 * 60 * 1000 - FLUSH_INTERVAL_MS, 'accurate to 10 minutes');
      assert.equal((await t.stores.sessions.list('alice', t.clock.now))[0]?.lastSeen, seen, 'as stored');
      t.clock.advance(3000);
      await check(cookie);
      await t.sessions.flushLastSeen();
      assert.deepEqual(writes, [1, 1]);
      assert.ok(started < seen);
    } finally {
      t.stores.sessions.touch = touch;
    }
  });
});
