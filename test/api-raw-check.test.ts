// Issue 8: GET/HEAD /api/auth/check answered on the raw request when no I/O is needed
// (src/http/raw-reads.ts) must be indistinguishable from the Fastify route: same status, headers and
// body, over a real socket. A query string sends a request down the Fastify route, so each case is
// asked both ways.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from './helpers/app.ts';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function ask(
  port: number,
  method: 'GET' | 'HEAD',
  path: string,
  headers: Record<string, string>,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Headers that legitimately differ between two answers: the time, and the connection handling. */
function comparable(headers: Answer['headers']): Record<string, unknown> {
  const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...rest } = headers;
  return rest;
}

describe('the raw check path of /api/auth/check', () => {
  let t: TestApp;
  let other: TestApp;
  let port: number;
  let rawAnswers = 0;
  before(async () => {
    t = await startTestApp({
      authenticator: fakeAuthenticator({ alice: 'pw' }),
      // ALLOWED_HOSTS lists the socket's and inject()'s Host: both paths check it, and pass it.
      env: { TRUSTED_ORIGINS: 'https://portal.example.org', ALLOWED_HOSTS: '127.0.0.1,localhost' },
    });
    other = await startTestApp({
      authenticator: fakeAuthenticator({}),
      env: { DATABASE_URL: t.config.databaseUrl },
    });
    port = Number(new URL(await t.fastify.listen({ port: 0, host: '127.0.0.1' })).port);
    const peek = t.sessions.peek.bind(t.sessions);
    t.sessions.peek = (id) => {
      const answer = peek(id);
      if (answer !== undefined) rawAnswers++;
      return answer;
    };
  });
  after(async () => {
    await other.close();
    await t.close();
  });

  test('every case answers exactly as the Fastify route does', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
    assert.equal((await ask(port, 'GET', '/api/auth/check', { cookie })).status, 200, 'logged in');
    const cases: Record<string, string>[] = [
      {},
      { cookie },
      { cookie: 'sessionid=junk' },
      { cookie: `sessionid=${'z'.repeat(32)}` },
      { cookie, origin: 'https://portal.example.org' },
      { cookie, origin: 'https://elsewhere.example' },
    ];
    for (const headers of cases) {
      for (const method of ['GET', 'HEAD'] as const) {
        for (const path of ['/api/auth/check', '/api/auth/check/']) {
          const fixed = { ...headers, 'x-request-id': 'same-id-for-both' };
          const before = rawAnswers;
          const viaRaw = await ask(port, method, path, fixed);
          const viaFastify = await ask(port, method, `${path}?route=fastify`, fixed);
          const label = `${method} ${path} ${JSON.stringify(headers)}`;
          assert.equal(viaRaw.status, viaFastify.status, label);
          assert.equal(viaRaw.body, viaFastify.body, label);
          assert.deepEqual(comparable(viaRaw.headers), comparable(viaFastify.headers), label);
          // Only an id the cache does not hold goes to the store: all of these are answered raw.
          if (!headers['cookie']?.includes('z'.repeat(32)))
            assert.equal(rawAnswers, before + 1, `${label} took the raw path`);
        }
      }
    }
  });

  test('a logout by another process is seen by the raw path on the very next request', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
    assert.equal((await ask(port, 'GET', '/api/auth/check', { cookie })).body, '"alice"');
    await other.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } });
    const after = await ask(port, 'GET', '/api/auth/check', { cookie });
    assert.equal(after.status, 403);
    assert.equal(after.body, '""');
  });

  test('the raw path counts in the metrics like the route', async () => {
    const scrape = async () => (await t.fastify.inject({ url: '/metrics' })).body;
    const count = (text: string) =>
      Number(
        /clubhouse_http_requests_total\{method="GET",route="\/api\/auth\/check",status="403"\} (\d+)/.exec(
          text,
        )?.[1] ?? 0,
      );
    const before = count(await scrape());
    await ask(port, 'GET', '/api/auth/check', {});
    assert.equal(count(await scrape()), before + 1);
  });
});
