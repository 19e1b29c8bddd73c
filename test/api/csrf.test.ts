// Contract §7: cross-origin protection on login (login CSRF) and logout, and the X-CSRFToken check.
// Decided from the request's headers before any session is looked at, the same on every store: run
// once, on startTestApp's SQLite.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type CsrfRequest, checkCsrf } from '../../src/auth/csrf.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';

const TRUSTED = ['https://portal.example.org'];
const ORIGIN_FAILED = { detail: 'CSRF Failed: Origin checking failed.' };
const TOKEN_FAILED = { detail: 'CSRF Failed: CSRF token incorrect.' };

describe('checkCsrf (the Go 1.25 CrossOriginProtection order)', () => {
  const base: CsrfRequest = {
    origin: undefined,
    secFetchSite: undefined,
    host: 'club.example:8000',
    headerToken: undefined,
    cookieToken: undefined,
  };
  const cases: [string, Partial<CsrfRequest>, 'ok' | 'origin' | 'token'][] = [
    ['no Origin, no Sec-Fetch-Site: a non-browser client', {}, 'ok'],
    [
      'trusted origin, even cross-site',
      { origin: 'https://portal.example.org', secFetchSite: 'cross-site' },
      'ok',
    ],
    [
      'Sec-Fetch-Site same-origin',
      { origin: 'https://elsewhere.example', secFetchSite: 'same-origin' },
      'ok',
    ],
    ['Sec-Fetch-Site none (typed by the user)', { secFetchSite: 'none' }, 'ok'],
    [
      'Sec-Fetch-Site same-site is refused',
      { origin: 'https://a.club.example', secFetchSite: 'same-site' },
      'origin',
    ],
    [
      'Sec-Fetch-Site cross-site is refused',
      { origin: 'https://evil.example', secFetchSite: 'cross-site' },
      'origin',
    ],
    ['Origin matching Host', { origin: 'http://club.example:8000' }, 'ok'],
    ['Origin matching Host, other case', { origin: 'http://CLUB.example:8000' }, 'ok'],
    ['Origin with another port', { origin: 'http://club.example:8001' }, 'origin'],
    ['Origin of another host', { origin: 'https://evil.example' }, 'origin'],
    ['Origin null', { origin: 'null' }, 'origin'],
    ['token equal to the cookie', { headerToken: 'A'.repeat(32), cookieToken: 'A'.repeat(32) }, 'ok'],
    ['token differs from the cookie', { headerToken: 'A'.repeat(32), cookieToken: 'B'.repeat(32) }, 'token'],
    ['token without a cookie', { headerToken: 'A'.repeat(32) }, 'token'],
    ['origin is decided before the token', { origin: 'https://evil.example', headerToken: 'x' }, 'origin'],
  ];
  for (const [name, overrides, verdict] of cases) {
    test(name, () => {
      assert.equal(checkCsrf({ ...base, ...overrides }, TRUSTED), verdict);
    });
  }
});

describe('CSRF on the unsafe endpoints', () => {
  let t: TestApp;
  let fake: ReturnType<typeof fakeAuthenticator>;
  before(async () => {
    fake = fakeAuthenticator({ alice: 'pw' });
    t = await startTestApp({ authenticator: fake, env: { TRUSTED_ORIGINS: TRUSTED.join(',') } });
  });
  after(() => t.close());

  const post = (url: string, headers: Record<string, string>) =>
    t.fastify.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', host: 'club.example', ...headers },
      payload: JSON.stringify({ username: 'alice', password: 'pw' }),
    });

  test('a cross-site login is refused before the body is read or IMAP contacted', async () => {
    const calls = fake.calls;
    const response = await post('/api/auth/login', { origin: 'https://evil.example' });
    assert.equal(response.statusCode, 403);
    assert.deepEqual(response.json(), ORIGIN_FAILED);
    assert.equal(response.headers['set-cookie'], undefined);
    const fetchSite = await post('/api/auth/login', { 'sec-fetch-site': 'cross-site' });
    assert.deepEqual(fetchSite.json(), ORIGIN_FAILED);
    assert.equal(fake.calls, calls);
  });

  test('same-origin, trusted and non-browser logins go through', async () => {
    const cases: Record<string, string>[] = [
      { origin: 'http://club.example' },
      { 'sec-fetch-site': 'same-origin', origin: 'http://club.example' },
      { origin: 'https://portal.example.org' },
      {},
    ];
    for (const headers of cases) {
      const response = await post('/api/auth/login', headers);
      assert.equal(response.statusCode, 200, JSON.stringify(headers));
    }
  });

  test('a cross-site logout is refused and the session survives', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
    const response = await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/logout',
      headers: { cookie, origin: 'https://evil.example', host: 'club.example' },
    });
    assert.equal(response.statusCode, 403);
    assert.deepEqual(response.json(), ORIGIN_FAILED);
    const check = await t.fastify.inject({ url: '/api/auth/check', headers: { cookie } });
    assert.equal(check.statusCode, 200);
  });

  test('X-CSRFToken, when sent, must equal the csrftoken cookie', async () => {
    const { cookie, csrftoken, sessionid } = await loginAs(t.fastify, 'alice', 'pw');
    const wrong = await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/logout',
      headers: { cookie, 'x-csrftoken': 'Z'.repeat(32) },
    });
    assert.equal(wrong.statusCode, 403);
    assert.deepEqual(wrong.json(), TOKEN_FAILED);
    const noCookie = await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/logout',
      headers: { cookie: `sessionid=${sessionid}`, 'x-csrftoken': csrftoken },
    });
    assert.deepEqual(noCookie.json(), TOKEN_FAILED);
    const right = await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/logout',
      headers: { cookie, 'x-csrftoken': csrftoken },
    });
    assert.equal(right.statusCode, 200);
  });

  test('GET requests are not subject to the origin check', async () => {
    const response = await t.fastify.inject({
      url: '/api/auth/check',
      headers: { origin: 'https://evil.example', host: 'club.example' },
    });
    assert.equal(response.statusCode, 403);
    assert.equal(response.body, '""');
  });
});
