// The access log is off by default (ACCESS_LOG): no line per request, on the raw check path
// or the Fastify routes, while the audit line of every login and every error stay; with
// ACCESS_LOG=true every request has exactly one `request completed` line carrying its request id.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';

function get(port: number, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

const parsed = (logs: string[]) => logs.map((line) => JSON.parse(line) as Record<string, unknown>);

async function exercise(t: TestApp, tag: string): Promise<string[]> {
  const port = Number(new URL(await t.fastify.listen({ port: 0, host: '127.0.0.1' })).port);
  const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
  const ids: string[] = [];
  const paths = ['/api/auth/check', '/api/auth/check', '/api/group/', '/api/nothing-here'];
  for (const [i, path] of paths.entries()) {
    const id = `${tag}-${i}`;
    ids.push(id);
    // The checks are answered on the raw path (the login put the session in the cache), the
    // others by the Fastify routes: both write the same line.
    await get(port, path, { cookie, 'x-request-id': id });
  }
  return ids;
}

describe('the access log', () => {
  let quiet: TestApp;
  let loud: TestApp;
  before(async () => {
    quiet = await startTestApp({
      authenticator: fakeAuthenticator({ alice: 'pw' }),
      env: { ACCESS_LOG: 'false' },
    });
    loud = await startTestApp({
      authenticator: fakeAuthenticator({ alice: 'pw' }),
      env: { ACCESS_LOG: 'true' },
    });
  });
  after(async () => {
    await quiet.close();
    await loud.close();
  });

  test('is off by default: no line per request, the login audit line stays', async () => {
    const ids = await exercise(quiet, 'quiet');
    const lines = parsed(quiet.logs);
    assert.deepEqual(
      lines.filter((line) => line['msg'] === 'request completed' || line['msg'] === 'incoming request'),
      [],
    );
    for (const id of ids) assert.ok(!quiet.logs.some((line) => line.includes(id)), `nothing about ${id}`);
    assert.equal(lines.filter((line) => line['msg'] === 'login attempt').length, 1, 'the audit line');
  });

  test('with ACCESS_LOG=true: exactly one line per request, with its id, method, URL and status', async () => {
    const ids = await exercise(loud, 'loud');
    const lines = parsed(loud.logs).filter((line) => line['msg'] === 'request completed');
    for (const id of ids) {
      const mine = lines.filter((line) => line['requestId'] === id);
      assert.equal(mine.length, 1, `one line for ${id}`);
      const [line] = mine as [Record<string, unknown>];
      assert.equal((line['req'] as Record<string, unknown>)['method'], 'GET');
      assert.equal(typeof (line['res'] as Record<string, unknown>)['statusCode'], 'number');
      assert.equal(typeof line['responseTime'], 'number');
      assert.ok(!JSON.stringify(line).includes('sessionid'), 'no cookie in the line');
    }
    const statuses = ids.map(
      (id) =>
        (lines.find((line) => line['requestId'] === id)?.['res'] as Record<string, unknown>)['statusCode'],
    );
    assert.deepEqual(statuses, [200, 200, 200, 404]);
  });
});
