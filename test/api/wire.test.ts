// Contract §1: the wire rules every response obeys, CORS and CONNECT. HTTP mechanics, the same on
// every store: they run once, on startTestApp's SQLite.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';

const SECURITY = {
  'x-frame-options': 'SAMEORIGIN',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
};

const ENDPOINTS = [
  { url: '/api/auth/check', allow: 'GET, HEAD, OPTIONS', name: 'Check' },
  { url: '/api/auth/login', allow: 'POST, OPTIONS', name: 'Login' },
  { url: '/api/auth/logout', allow: 'POST, OPTIONS', name: 'Logout' },
  { url: '/api/group/', allow: 'GET, HEAD, OPTIONS', name: 'Group List' },
  { url: '/api/group/7', allow: 'GET, HEAD, OPTIONS', name: 'Group Detail' },
];

function assertSecurityHeaders(headers: Record<string, unknown>, api: boolean) {
  for (const [name, value] of Object.entries(SECURITY)) assert.equal(headers[name], value, name);
  if (api) assert.equal(headers['cache-control'], 'no-store');
}

describe('wire rules (contract §1)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ authenticator: fakeAuthenticator({ alice: 'pw' }) });
  });
  after(() => t.close());

  test('every response carries the security headers, 404s and errors included', async () => {
    const cases = [
      { method: 'GET', url: '/healthz', status: 200, api: false },
      { method: 'GET', url: '/nowhere', status: 404, api: false },
      { method: 'GET', url: '/api/nowhere', status: 404, api: true },
      { method: 'GET', url: '/api/auth/check', status: 403, api: true },
      { method: 'PUT', url: '/api/auth/check', status: 405, api: true },
      { method: 'POST', url: '/api/auth/login', status: 400, api: true },
      { method: 'GET', url: '/api/group/%zz', status: 404, api: true },
    ] as const;
    for (const c of cases) {
      const response = await t.fastify.inject({ method: c.method, url: c.url });
      assert.equal(response.statusCode, c.status, `${c.method} ${c.url}`);
      assertSecurityHeaders(response.headers, c.api);
      assert.match(String(response.headers['content-type']), /^application\/json/);
    }
  });

  test('unknown /api paths answer 404 {"detail": "Not found."}', async () => {
    const response = await t.fastify.inject({ url: '/api/auth/nope' });
    assert.equal(response.statusCode, 404);
    assert.deepEqual(response.json(), { detail: 'Not found.' });
  });

  test('an undecodable path is a JSON 404, not a framework error', async () => {
    const response = await t.fastify.inject({ url: '/api/group/%zz' });
    assert.equal(response.statusCode, 404);
    assert.deepEqual(response.json(), { detail: 'Not found.' });
  });

  for (const endpoint of ENDPOINTS) {
    test(`${endpoint.url}: OPTIONS answers 200 with Allow and a description`, async () => {
      const response = await t.fastify.inject({ method: 'OPTIONS', url: endpoint.url });
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers['allow'], endpoint.allow);
      assert.deepEqual(response.json(), { name: endpoint.name, methods: endpoint.allow.split(', ') });
    });

    test(`${endpoint.url}: other methods answer 405 with Allow`, async () => {
      for (const method of [
        'PUT',
        'PATCH',
        'DELETE',
        'TRACE',
        'PROPFIND',
        ...(endpoint.allow.includes('GET') ? ['POST'] : ['GET']),
      ] as const) {
        const response = await t.fastify.inject({ method, url: endpoint.url });
        assert.equal(response.statusCode, 405, method);
        assert.equal(response.headers['allow'], endpoint.allow);
        assert.deepEqual(response.json(), { detail: `Method "${method}" not allowed.` });
      }
    });

    test(`${endpoint.url}: the trailing slash does not matter`, async () => {
      const other = endpoint.url.endsWith('/') ? endpoint.url.slice(0, -1) : `${endpoint.url}/`;
      for (const url of [endpoint.url, other]) {
        const response = await t.fastify.inject({ method: 'OPTIONS', url });
        assert.equal(response.statusCode, 200, url);
        assert.equal(response.headers['allow'], endpoint.allow);
      }
    });
  }

  test('HEAD on a GET endpoint gives the GET status and headers without a body', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
    for (const [url, status] of [
      ['/api/auth/check', 200],
      ['/api/group/', 200],
      ['/api/group/999', 404],
    ] as const) {
      const get = await t.fastify.inject({ method: 'GET', url, headers: { cookie } });
      const head = await t.fastify.inject({ method: 'HEAD', url, headers: { cookie } });
      assert.equal(get.statusCode, status);
      assert.equal(head.statusCode, status);
      assert.equal(head.body, '');
      assert.equal(head.headers['allow'], 'GET, HEAD, OPTIONS');
      assert.equal(head.headers['content-type'], get.headers['content-type']);
    }
  });

  test('OPTIONS and 405 are answered before any session or CSRF check', async () => {
    const foreign = { origin: 'https://evil.example', cookie: 'sessionid=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' };
    const options = await t.fastify.inject({ method: 'OPTIONS', url: '/api/auth/logout', headers: foreign });
    assert.equal(options.statusCode, 200);
    const wrong = await t.fastify.inject({ method: 'GET', url: '/api/auth/logout', headers: foreign });
    assert.equal(wrong.statusCode, 405);
  });

  test('405 comes before the body is read: a bad body of a refused method changes nothing', async () => {
    for (const [type, payload] of [
      ['application/json', '{broken'],
      ['text/plain', 'hello'],
      ['application/json', 'x'.repeat(70 * 1024)],
    ] as const) {
      const response = await t.fastify.inject({
        method: 'PUT',
        url: '/api/auth/login',
        headers: { 'content-type': type },
        payload,
      });
      assert.equal(response.statusCode, 405, type);
      assert.equal(response.headers['allow'], 'POST, OPTIONS');
      assert.deepEqual(response.json(), { detail: 'Method "PUT" not allowed.' });
    }
  });

  test('a body over 64 KiB answers 413', async () => {
    const response = await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ username: 'alice', password: 'x'.repeat(70 * 1024) }),
    });
    assert.equal(response.statusCode, 413);
    assert.deepEqual(response.json(), { detail: 'Request body too large.' });
    assert.equal(response.headers['allow'], 'POST, OPTIONS');
  });

  test('X-Request-Id is kept when sane, made when absent, replaced when odd', async () => {
    const kept = await t.fastify.inject({ url: '/healthz', headers: { 'x-request-id': 'abc-123' } });
    assert.equal(kept.headers['x-request-id'], 'abc-123');
    const made = await t.fastify.inject({ url: '/healthz' });
    assert.match(String(made.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    const odd = await t.fastify.inject({ url: '/healthz', headers: { 'x-request-id': 'a b\u0007c' } });
    assert.match(String(odd.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    assert.ok(
      t.logs.some((line) => JSON.parse(line).requestId === 'abc-123'),
      'the id is on the log lines',
    );
  });

  test('GET /healthz answers 200', async () => {
    const response = await t.fastify.inject({ url: '/healthz' });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { status: 'ok' });
  });
});

describe('CORS for TRUSTED_ORIGINS (contract §7)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      authenticator: fakeAuthenticator({}),
      env: { TRUSTED_ORIGINS: 'https://app.example.org' },
    });
  });
  after(() => t.close());

  test('a preflight from a trusted origin is answered with credentials allowed', async () => {
    const response = await t.fastify.inject({
      method: 'OPTIONS',
      url: '/api/auth/login',
      headers: { origin: 'https://app.example.org', 'access-control-request-method': 'POST' },
    });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['access-control-allow-origin'], 'https://app.example.org');
    assert.equal(response.headers['access-control-allow-credentials'], 'true');
    assert.equal(response.headers['access-control-allow-methods'], 'POST, OPTIONS');
    assert.match(String(response.headers['access-control-allow-headers']), /x-csrftoken/);
  });

  test('any other origin gets no CORS headers (CORS is off for it)', async () => {
    const response = await t.fastify.inject({
      method: 'OPTIONS',
      url: '/api/auth/login',
      headers: { origin: 'https://other.example.org', 'access-control-request-method': 'POST' },
    });
    assert.equal(response.headers['access-control-allow-origin'], undefined);
    assert.equal(response.headers['access-control-allow-methods'], undefined);
  });
});

/** Sends raw bytes and reads until the server closes the connection (or 5 s pass: then it hung). */
function exchange(port: number, bytes: string): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, () => socket.write(bytes));
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false });
    }, 5000);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
    socket.on('error', reject);
  });
}

function parseAnswer(text: string): { status: number; headers: Map<string, string>; body: string } {
  const [head = '', body = ''] = text.split('\r\n\r\n', 2);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

// Node drops CONNECT unanswered unless told otherwise (http/node-server.ts).
describe('CONNECT is answered like any other method', () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await startTestApp({ authenticator: fakeAuthenticator({}) });
    port = Number(new URL(await t.fastify.listen({ port: 0, host: '127.0.0.1' })).port);
  });
  after(() => t.close());

  for (const endpoint of ENDPOINTS) {
    test(`CONNECT ${endpoint.url} answers 405 with Allow and the headers of §1`, async () => {
      const { text, closed } = await exchange(
        port,
        `CONNECT ${endpoint.url} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: connect-1\r\n\r\n`,
      );
      const answer = parseAnswer(text);
      assert.equal(answer.status, 405, text);
      assert.equal(answer.headers.get('allow'), endpoint.allow);
      assertSecurityHeaders(Object.fromEntries(answer.headers), true);
      assert.equal(answer.headers.get('x-request-id'), 'connect-1');
      assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
      assert.deepEqual(JSON.parse(answer.body), { detail: 'Method "CONNECT" not allowed.' });
      assert.ok(closed, 'the connection closes after the answer (nothing is tunnelled)');
    });
  }

  test('CONNECT host:port (a proxy request) is answered, not dropped, and the server keeps serving', async () => {
    const { text, closed } = await exchange(
      port,
      'CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n',
    );
    const answer = parseAnswer(text);
    assert.equal(answer.status, 404, text);
    assertSecurityHeaders(Object.fromEntries(answer.headers), false);
    assert.deepEqual(JSON.parse(answer.body), { detail: 'Not found.' });
    assert.ok(closed);
    const after = await exchange(
      port,
      'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
    );
    assert.equal(parseAnswer(after.text).status, 200);
  });
});
