// Contract §7: ALLOWED_HOSTS against DNS rebinding. Django's semantics for the match; a
// refused Host gets 400 {"detail": "Invalid Host header."} with the §1 headers before anything else,
// on the Fastify routes and on the raw check path alike; the health probes are served to any Host.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../../src/cli/main.ts';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { hostAllowed, requestHost, targetPath } from '../../src/http/allowed-hosts.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';

const INVALID_HOST = { detail: 'Invalid Host header.' };

describe('the Host match (Django validate_host)', () => {
  const allowed = hostAllowed(['club.example.org', '.example.net', '[::1]', '10.0.0.7']);
  const cases: [string | undefined, boolean][] = [
    ['club.example.org', true],
    ['CLUB.Example.ORG', true],
    ['club.example.org:8443', true],
    ['club.example.org.', true],
    ['club.example.org.:80', true],
    ['example.net', true],
    ['a.b.example.net:1', true],
    ['[::1]', true],
    ['[::1]:8000', true],
    ['10.0.0.7:8000', true],
    ['evil.example', false],
    ['badexample.net', false],
    ['example.net.evil.example', false],
    ['club.example.org.evil.example', false],
    ['sub.club.example.org', false],
    ['::1', false],
    ['[::2]', false],
    ['club.example.org:port', false],
    ['club.example.org@evil.example', false],
    ['club.example.org/x', false],
    ['club example.org', false],
    ['', false],
    [undefined, false],
  ];
  for (const [host, expected] of cases) {
    test(`${JSON.stringify(host)} → ${expected ? 'allowed' : 'refused'}`, () => {
      assert.equal(allowed(host), expected);
    });
  }

  test('unset serves every Host; * every well-formed one, but not a missing or malformed Host', () => {
    assert.equal(hostAllowed(null)('anything at all'), true);
    assert.equal(hostAllowed(null)(undefined), true);
    const star = hostAllowed(['*']);
    assert.equal(star('evil.example:80'), true);
    assert.equal(star(undefined), false);
    assert.equal(star('bad host'), false);
  });
});

describe('ALLOWED_HOSTS setting', () => {
  test('parsed as a lower-cased list; unset is null', () => {
    assert.equal(loadConfig({}).http.allowedHosts, null);
    assert.deepEqual(
      loadConfig({ ALLOWED_HOSTS: ' Club.Example.org , .example.NET,[::1],* , fqdn.example. ' }).http
        .allowedHosts,
      ['club.example.org', '.example.net', '[::1]', '*', 'fqdn.example'],
    );
  });

  for (const raw of [
    'https://club.example.org',
    'club.example.org:8000',
    'a b',
    '::1',
    ',',
    'club.example.org/x',
    '*.example.org',
  ]) {
    test(`${JSON.stringify(raw)} is refused, naming ALLOWED_HOSTS`, () => {
      assert.throws(
        () => loadConfig({ ALLOWED_HOSTS: raw }),
        (err: unknown) => err instanceof ConfigError && err.variable === 'ALLOWED_HOSTS',
      );
    });
  }

  const check = async (env: Record<string, string>) => {
    const out: string[] = [];
    const code = await runCli(
      ['config', 'check', '--json'],
      { IMAP_HOST: 'mail.example.org', ...env },
      {
        out: (text) => out.push(text),
        err: () => undefined,
      },
    );
    assert.equal(code, 0);
    return JSON.parse(out.join('\n')) as { settings: Record<string, string>; warnings: string[] };
  };

  test('config check warns when it is unset and HOST is not loopback, and shows it', async () => {
    const open = await check({ HOST: '0.0.0.0' });
    assert.ok(
      open.warnings.some((w) => w.startsWith('ALLOWED_HOSTS is not set')),
      open.warnings.join('\n'),
    );
    const listed = await check({ HOST: '0.0.0.0', ALLOWED_HOSTS: 'club.example.org' });
    assert.ok(!listed.warnings.some((w) => w.includes('ALLOWED_HOSTS')));
    assert.equal(listed.settings['ALLOWED_HOSTS'], 'club.example.org');
    const loopback = await check({ HOST: '127.0.0.1' });
    assert.ok(!loopback.warnings.some((w) => w.includes('ALLOWED_HOSTS')));
  });
});

function get(port: number, path: string, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
    (resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    },
  );
}

describe('a Host that ALLOWED_HOSTS does not list', () => {
  let t: TestApp;
  let port: number;
  const authenticator = fakeAuthenticator({ alice: 'pw' });
  before(async () => {
    t = await startTestApp({ authenticator, env: { ALLOWED_HOSTS: 'club.example.org,.example.net' } });
    port = Number(new URL(await t.fastify.listen({ port: 0, host: '127.0.0.1' })).port);
  });
  after(() => t.close());

  const EVIL = { host: 'evil.example', 'x-request-id': 'rebound-1' };

  test('gets 400 "Invalid Host header." with the §1 headers, on every path', async () => {
    for (const [method, url, api] of [
      ['GET', '/', false],
      ['GET', '/group/7', false],
      ['GET', '/metrics', false],
      ['GET', '/nowhere', false],
      ['GET', '/api/auth/check', true],
      ['GET', '/api/group/', true],
      ['GET', '/api/schema', true],
      ['GET', '/api/nowhere', true],
      ['GET', '/api/group/%zz', true],
      ['OPTIONS', '/api/auth/login', true],
      ['PUT', '/api/auth/login', true],
    ] as const) {
      const response = await t.fastify.inject({ method, url, headers: EVIL });
      const label = `${method} ${url}`;
      assert.equal(response.statusCode, 400, label);
      assert.deepEqual(response.json(), INVALID_HOST, label);
      assert.equal(response.headers['x-frame-options'], 'SAMEORIGIN', label);
      assert.equal(response.headers['x-content-type-options'], 'nosniff', label);
      assert.equal(response.headers['x-request-id'], 'rebound-1', label);
      assert.equal(response.headers['cache-control'], api ? 'no-store' : undefined, label);
    }
  });

  test('a login from a rebound page never reaches the password check', async () => {
    const before = authenticator.calls;
    const response = await t.fastify.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { ...EVIL, 'content-type': 'application/json' },
      payload: JSON.stringify({ username: 'alice', password: 'pw' }),
    });
    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), INVALID_HOST);
    assert.equal(response.headers['set-cookie'], undefined);
    assert.equal(authenticator.calls, before);
  });

  test('the raw check path refuses it too, and serves a listed Host (any case, any port)', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'pw', { host: 'club.example.org' });
    for (const path of ['/api/auth/check', '/api/auth/check/']) {
      const refused = await get(port, path, { ...EVIL, cookie });
      assert.equal(refused.status, 400, path);
      assert.deepEqual(JSON.parse(refused.body), INVALID_HOST);
      assert.equal(refused.headers['cache-control'], 'no-store');
    }
    for (const host of ['club.example.org', 'CLUB.example.org:8443', 'www.example.net']) {
      const served = await get(port, '/api/auth/check', { host, cookie });
      assert.equal(served.status, 200, host);
      assert.equal(served.body, '"alice"');
    }
  });

  test('the health probes answer whatever the Host (load balancers probe by address)', async () => {
    const healthz = await t.fastify.inject({ url: '/healthz', headers: { host: '10.1.2.3:8000' } });
    assert.equal(healthz.statusCode, 200);
    const readyz = await t.fastify.inject({ url: '/readyz', headers: { host: '10.1.2.3:8000' } });
    assert.notEqual(readyz.statusCode, 400);
  });

  test('a listed Host is served as before', async () => {
    const response = await t.fastify.inject({
      url: '/api/auth/check',
      headers: { host: 'club.example.org:80' },
    });
    assert.equal(response.statusCode, 403);
    assert.equal(response.body, '""');
  });
});

describe('without ALLOWED_HOSTS', () => {
  test('any Host is served (the default, as before)', async () => {
    const t = await startTestApp({ authenticator: fakeAuthenticator({}) });
    try {
      const response = await t.fastify.inject({ url: '/api/auth/check', headers: { host: 'evil.example' } });
      assert.equal(response.statusCode, 403);
    } finally {
      await t.close();
    }
  });
});

/** One request written by hand on a fresh connection (two Host lines cannot be sent otherwise). */
async function rawExchange(port: number, head: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  socket.end(`${head}\r\n`);
  let text = '';
  for await (const chunk of socket) text += String(chunk);
  return text;
}

// Node serves the first of two Host lines; a proxy that routed by the second
// and this service would disagree on the site asked. RFC 9112 §3.2: 400.
describe('a request with more than one Host line', () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await startTestApp({ authenticator: fakeAuthenticator({ alice: 'pw' }) });
    port = Number(new URL(await t.fastify.listen({ port: 0, host: '127.0.0.1' })).port);
  });
  after(() => t.close());

  for (const path of ['/api/auth/check', '/api/group/', '/healthz', '/']) {
    test(`GET ${path}: 400 "Invalid Host header.", with ALLOWED_HOSTS unset`, async () => {
      const text = await rawExchange(
        port,
        `GET ${path} HTTP/1.1\r\nHost: club.example.org\r\nhost: evil.example\r\nConnection: close\r\n`,
      );
      assert.match(text, /^HTTP\/1\.1 400 /);
      assert.ok(text.endsWith(JSON.stringify(INVALID_HOST)), text);
      assert.match(text, /x-frame-options: SAMEORIGIN/i);
    });
  }

  test('one Host line is served as before', async () => {
    const text = await rawExchange(
      port,
      'GET /api/auth/check HTTP/1.1\r\nHost: club.example.org\r\nConnection: close\r\n',
    );
    assert.match(text, /^HTTP\/1\.1 403 /);
  });
});

// RFC 9112 §3.2.2: a request-target in absolute form names the host asked; the Host header is then
// ignored. Node and Fastify route `GET http://evil.example/api/auth/check` by its path and report
// the Host header, so without this rule a listed Host beside another authority was served. Over a
// real socket: the raw read path leaves absolute-form targets to Fastify, whose entry judges them.
describe('a request-target in absolute form is judged by its authority', () => {
  let t: TestApp;
  let port: number;
  let cookie: string;
  before(async () => {
    t = await startTestApp({
      authenticator: fakeAuthenticator({ alice: 'pw' }),
      env: { ALLOWED_HOSTS: 'club.example.org,.example.net' },
    });
    port = Number(new URL(await t.fastify.listen({ port: 0, host: '127.0.0.1' })).port);
    cookie = (await loginAs(t.fastify, 'alice', 'pw', { host: 'club.example.org' })).cookie;
  });
  after(() => t.close());

  const exchange = (method: string, target: string, host: string) =>
    rawExchange(
      port,
      `${method} ${target} HTTP/1.1\r\nHost: ${host}\r\nCookie: ${cookie}\r\nConnection: close\r\n`,
    );

  test('the authority and the path are read from the target', () => {
    assert.equal(requestHost('http://evil.example/api/auth/check', 'club.example.org'), 'evil.example');
    assert.equal(requestHost('HTTPS://Club.Example.org:8443/x?y', 'evil.example'), 'Club.Example.org:8443');
    assert.equal(requestHost('http://user@club.example.org/', 'club.example.org'), 'user@club.example.org');
    assert.equal(requestHost('/api/auth/check', 'club.example.org'), 'club.example.org');
    assert.equal(targetPath('http://evil.example/api/group/?x=1'), '/api/group/?x=1');
    assert.equal(targetPath('http://evil.example'), '/');
    assert.equal(targetPath('/healthz'), '/healthz');
  });

  test('an authority ALLOWED_HOSTS does not list gets 400, whatever the Host header says', async () => {
    for (const [method, target] of [
      ['GET', 'http://evil.example/api/auth/check'],
      ['GET', 'http://evil.example/api/group/'],
      ['GET', 'http://evil.example/api/group/1'],
      ['HEAD', 'http://evil.example/api/auth/check'],
      ['POST', 'http://evil.example/api/auth/logout'],
      ['GET', 'http://evil.example/'],
      ['GET', 'http://user@club.example.org/api/auth/check'],
      ['GET', 'http:///api/auth/check'],
    ] as const) {
      const text = await exchange(method, target, 'club.example.org');
      assert.match(text, /^HTTP\/1\.1 400 /, `${method} ${target}`);
      if (method !== 'HEAD')
        assert.ok(text.endsWith(JSON.stringify(INVALID_HOST)), `${method} ${target}: ${text}`);
      assert.match(text, /x-frame-options: SAMEORIGIN/i);
      if (target.includes('/api/')) assert.match(text, /cache-control: no-store/i, target);
    }
  });

  test('a listed authority is served, whatever the Host header says, as the same path in origin form', async () => {
    for (const target of [
      'http://club.example.org/api/auth/check',
      'http://www.example.net:8443/api/auth/check',
    ]) {
      const text = await exchange('GET', target, 'evil.example');
      assert.match(text, /^HTTP\/1\.1 200 /, target);
      assert.ok(text.endsWith('"alice"'), text);
    }
    const origin = await exchange('GET', '/api/auth/check', 'club.example.org');
    assert.match(origin, /^HTTP\/1\.1 200 /);
    assert.ok(origin.endsWith('"alice"'));
  });

  test('the health probes answer whatever the authority', async () => {
    const text = await exchange('GET', 'http://10.1.2.3:8000/healthz', 'evil.example');
    assert.match(text, /^HTTP\/1\.1 200 /);
  });
});
