// GET/HEAD /api/auth/check and the group pages answered on the raw request when no
// I/O is needed (src/http/raw-reads.ts) must be indistinguishable from the Fastify routes: same
// status, headers and body, over a real socket. A query string sends a request down the Fastify
// route, so each case is asked both ways.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { ASK_THE_STORE } from '../../src/auth/sessions.ts';
import { applyImport } from '../../src/groups/import.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';

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
      authenticator: fakeAuthenticator({ alice: 'pw', zoë: 'pw' }),
      // ALLOWED_HOSTS lists the socket's and inject()'s Host: both paths check it, and pass it.
      env: { TRUSTED_ORIGINS: 'https://portal.example.org', ALLOWED_HOSTS: '127.0.0.1,localhost' },
    });
    other = await startTestApp({
      authenticator: fakeAuthenticator({}),
      env: { DATABASE_URL: t.config.databaseUrl },
    });
    port = Number(new URL(await t.fastify.listen({ port: 0, host: '127.0.0.1' })).port);
    const fromMemory = t.sessions.fromMemory.bind(t.sessions);
    t.sessions.fromMemory = (id) => {
      const answer = fromMemory(id);
      if (answer !== ASK_THE_STORE) rawAnswers++;
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
    // A username that is not ASCII: its answer is sent as UTF-8, an ASCII one as latin1 (raw-reads.ts).
    const zoe = (await loginAs(t.fastify, 'zoë', 'pw')).cookie;
    assert.equal((await ask(port, 'GET', '/api/auth/check', { cookie: zoe })).body, '"zoë"');
    const cases: Record<string, string>[] = [
      {},
      { cookie },
      { cookie: zoe },
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

describe('the raw read path of the group pages', () => {
  let t: TestApp;
  let other: TestApp;
  let port: number;
  let rawAnswers = 0;
  before(async () => {
    t = await startTestApp({
      authenticator: fakeAuthenticator({ alice: 'pw', bob: 'pw' }),
      env: { TRUSTED_ORIGINS: 'https://portal.example.org' },
    });
    other = await startTestApp({
      authenticator: fakeAuthenticator({}),
      env: { DATABASE_URL: t.config.databaseUrl },
    });
    const group = (id: number, name: string) => ({
      id,
      name,
      description: `About ${name} "quoted" \u2028`,
      short_description: '',
      activities: 'Ünïcødé 🎲',
      type: id % 2,
    });
    const imported = await applyImport(
      t.stores,
      {
        groups: [group(1, 'Chess'), group(2, 'Choir'), group(2_147_483_647, 'Largest')],
        memberships: [
          { group: 1, username: 'alice', status: 1 },
          { group: 2_147_483_647, username: 'alice', status: 2 },
          { group: 2, username: 'alice', status: 0 },
        ],
      },
      'lower',
    );
    assert.equal(imported.ok, true);
    port = Number(new URL(await t.fastify.listen({ port: 0, host: '127.0.0.1' })).port);
    // Counts the answers the raw path took from the group memory.
    const groups = t.stores.memory.groups!;
    const list = groups.list.bind(groups);
    const detail = groups.detail.bind(groups);
    groups.list = (username) => {
      const answer = list(username);
      if (answer !== undefined) rawAnswers++;
      return answer;
    };
    groups.detail = (id, username) => {
      const answer = detail(id, username);
      if (answer !== undefined) rawAnswers++;
      return answer;
    };
  });
  after(async () => {
    await other.close();
    await t.close();
  });

  test('every case answers exactly as the Fastify routes do', async () => {
    const alice = (await loginAs(t.fastify, 'alice', 'pw')).cookie;
    const bob = (await loginAs(t.fastify, 'bob', 'pw')).cookie;
    const paths = [
      '/api/group/',
      '/api/group',
      '/api/group/1',
      '/api/group/1/',
      '/api/group/0001',
      '/api/group/2',
      '/api/group/2147483647',
      '/api/group/2147483648',
      '/api/group/0',
      '/api/group/99',
      '/api/group/x',
      '/api/group/1/extra',
      `/api/group/${'0'.repeat(500)}1`,
    ];
    const cases: Record<string, string>[] = [
      {},
      { cookie: alice },
      { cookie: bob },
      { cookie: 'sessionid=junk' },
      { cookie: alice, origin: 'https://portal.example.org' },
    ];
    let raw = 0;
    for (const headers of cases) {
      for (const method of ['GET', 'HEAD'] as const) {
        for (const path of paths) {
          const fixed = { ...headers, 'x-request-id': 'same-id-for-both' };
          // Twice: the first answer may fill the cache, the second may then come from it.
          await ask(port, method, path, fixed);
          const before = rawAnswers;
          const viaRaw = await ask(port, method, path, fixed);
          if (rawAnswers > before) raw++;
          const separator = path.includes('?') ? '&' : '?';
          const viaFastify = await ask(port, method, `${path}${separator}route=fastify`, fixed);
          const label = `${method} ${path} ${JSON.stringify(headers)}`;
          assert.equal(viaRaw.status, viaFastify.status, label);
          assert.equal(viaRaw.body, viaFastify.body, label);
          assert.deepEqual(comparable(viaRaw.headers), comparable(viaFastify.headers), label);
        }
      }
    }
    // The logged-in cases of the existing list and groups: alice's and bob's lists, alice's groups.
    assert.ok(raw >= 20, `answered on the raw path ${raw} times`);
  });

  test('a change made by another process is seen by the raw path on the very next request', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
    const list = async () =>
      JSON.parse((await ask(port, 'GET', '/api/group/', { cookie })).body) as { id: number }[];
    assert.deepEqual(
      (await list()).map((g) => g.id),
      [1, 2_147_483_647],
    );
    assert.deepEqual(
      (await list()).map((g) => g.id),
      [1, 2_147_483_647],
      'now from memory',
    );
    await other.stores.groups.setMembership({ group: 2, username: 'alice', status: 1 });
    assert.deepEqual(
      (await list()).map((g) => g.id),
      [1, 2, 2_147_483_647],
    );
    const detail = await ask(port, 'GET', '/api/group/2', { cookie });
    assert.equal((JSON.parse(detail.body) as { member_status: number }).member_status, 1);
    await other.stores.groups.removeGroup(2);
    assert.equal((await ask(port, 'GET', '/api/group/2', { cookie })).status, 404);
    await other.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } });
    assert.equal((await ask(port, 'GET', '/api/group/', { cookie })).status, 403);
  });

  test('the raw group answers count in the metrics like the routes', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
    const scrape = async () => (await t.fastify.inject({ url: '/metrics' })).body;
    const count = (text: string, route: string) =>
      Number(
        new RegExp(
          `clubhouse_http_requests_total\\{method="GET",route="${route}",status="200"\\} (\\d+)`,
        ).exec(text)?.[1] ?? 0,
      );
    await ask(port, 'GET', '/api/group/', { cookie });
    await ask(port, 'GET', '/api/group/1', { cookie });
    const before = await scrape();
    const rawBefore = rawAnswers;
    await ask(port, 'GET', '/api/group/', { cookie });
    await ask(port, 'GET', '/api/group/1', { cookie });
    assert.equal(rawAnswers, rawBefore + 2, 'both from the raw path');
    const afterScrape = await scrape();
    assert.equal(count(afterScrape, '/api/group'), count(before, '/api/group') + 1);
    assert.equal(count(afterScrape, '/api/group/:id'), count(before, '/api/group/:id') + 1);
  });
});
