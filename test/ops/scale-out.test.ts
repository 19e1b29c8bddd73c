// Scale-out (docs/scaling.md): instances share nothing but the stores (PostgreSQL and optionally
// Redis; one SQLite file for processes of one machine), so a session or a throttle count made on one
// is seen by all; WORKERS=2 serves one port from two processes that replace each other. (A store
// stopped and started under a running app: store/outage-restart.)
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { dovecotEnv, fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { request, startCluster } from '../helpers/cluster.ts';
import { type Dovecot, startDovecot, testUser } from '../helpers/dovecot.ts';
import { describeEachStore } from '../helpers/stores.ts';

const PASSWORDS = { alice: 'alice-pw', bob: 'bob-pw' };
const RECOVERY_DEADLINE_MS = 30_000;

const check = (t: TestApp, cookie?: string) =>
  t.fastify.inject({ url: '/api/auth/check', headers: cookie === undefined ? {} : { cookie } });

const attempt = (t: TestApp, username: string, password: string, remoteAddress: string) =>
  t.fastify.inject({
    method: 'POST',
    url: '/api/auth/login',
    remoteAddress,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ username, password }),
  });

// On every store: instances on several machines share PostgreSQL (directly or through PgBouncer,
// with or without Redis sessions); on one machine, processes may as well share one SQLite file.
describeEachStore('two instances sharing the stores', (store) => {
  let a: TestApp;
  let b: TestApp;
  before(async () => {
    a = await startTestApp({ store, authenticator: fakeAuthenticator(PASSWORDS) });
    b = await startTestApp({ authenticator: fakeAuthenticator(PASSWORDS), env: a.storeEnv });
  });
  after(async () => {
    // B first: closing A drops the database they share.
    await b?.close();
    await a?.close();
  });

  test('logged in on A, the session works on B; logged out on B, it is dead on A', async () => {
    const { response, cookie } = await loginAs(a.fastify, 'alice', PASSWORDS.alice);
    assert.equal(response.statusCode, 200);
    const onB = await check(b, cookie);
    assert.equal(onB.statusCode, 200);
    assert.equal(onB.body, '"alice"');
    const logout = await b.fastify.inject({
      method: 'POST',
      url: '/api/auth/logout',
      headers: { cookie },
    });
    assert.equal(logout.statusCode, 200);
    const onA = await check(a, cookie);
    assert.equal(onA.statusCode, 403);
    assert.equal(onA.body, '""');
  });

  test('5 failures spread over A and B throttle the username on both', async () => {
    const apps = [a, b, a, b, a];
    const firstFailure = Date.now();
    for (const [i, app] of apps.entries()) {
      assert.equal((await attempt(app, 'bob', `wrong-${i}`, '198.51.100.7')).statusCode, 403);
    }
    for (const app of [b, a]) {
      const sixth = await attempt(app, 'bob', PASSWORDS.bob, '203.0.113.9');
      assert.equal(sixth.statusCode, 429);
      // The window (900 s) from the first failure: on a loaded machine whole seconds pass meanwhile.
      const elapsed = Math.ceil((Date.now() - firstFailure) / 1000);
      const retryAfter = Number(sixth.headers['retry-after']);
      assert.ok(retryAfter <= 900 && retryAfter >= 900 - elapsed, `Retry-After ${retryAfter}`);
    }
  });

  test('a user disabled through one instance’s stores is logged out on the other', async () => {
    const { cookie } = await loginAs(a.fastify, 'alice', PASSWORDS.alice);
    assert.equal((await check(b, cookie)).statusCode, 200);
    const { disableUser } = await import('../../src/auth/users.ts');
    assert.deepEqual(await disableUser(b.stores, 'alice'), { revoked: 1 });
    assert.equal((await check(a, cookie)).statusCode, 403);
  });
});

describe('WORKERS=2: one port, two processes, replaced when killed, drained on SIGTERM', () => {
  let dovecot: Dovecot;
  let dir: string;
  before(async () => {
    dovecot = await startDovecot();
    dir = mkdtempSync(join(tmpdir(), 'clubhouse-workers-'));
  });
  after(async () => {
    await dovecot?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('both workers answer, a killed one is replaced, SIGTERM exits 0', async () => {
    const cluster = await startCluster({
      DATABASE_URL: `sqlite:${join(dir, 'clubhouse.db')}`,
      SHUTDOWN_GRACE_MS: '5000',
      ...dovecotEnv(dovecot),
    });
    const { port, server, lines, servingPids } = cluster;
    const waitFor = async (what: string, done: () => boolean) => {
      const deadline = Date.now() + RECOVERY_DEADLINE_MS;
      while (!done()) {
        if (!server.running())
          assert.fail(`server exited waiting for ${what}:\n${await server.finalOutput()}`);
        if (Date.now() > deadline) assert.fail(`no ${what}:\n${server.output()}`);
        await sleep(50);
      }
    };
    try {
      const workers = cluster.workers;
      assert.equal(workers.length, 2);
      assert.ok(!workers.includes(server.child.pid!), 'the primary does not serve');

      // 10 users log in, then 200 checks on fresh connections, all answered rightly.
      const users = Array.from({ length: 10 }, (_, i) => testUser(`user${String(i).padStart(3, '0')}`));
      const cookies = new Map<string, string>();
      for (const user of users) {
        const login = await request(port, 'POST', '/api/auth/login', {
          body: JSON.stringify({ username: user.username, password: user.password }),
        });
        assert.equal(login.status, 200, login.body);
        const setCookie = login.headers['set-cookie'] ?? [];
        cookies.set(user.username, setCookie.map((c) => c.split(';')[0]).join('; '));
      }
      const checkAll = async (rounds: number) => {
        for (let i = 0; i < rounds; i++) {
          const user = users[i % users.length]!;
          const answer = await request(port, 'GET', '/api/auth/check', {
            cookie: cookies.get(user.username)!,
          });
          assert.equal(answer.status, 200, `check ${i}`);
          assert.equal(answer.body, JSON.stringify(user.username));
        }
      };
      await checkAll(200);
      const answered = new Set(
        lines.filter((line) => line['msg'] === 'request completed').map((line) => Number(line['pid'])),
      );
      assert.deepEqual([...answered].sort(), [...workers].sort(), 'both workers answered requests');
      // contract §6: /metrics adds up all workers, whichever worker answers the scrape.
      for (let i = 0; i < 2; i++) {
        const scrape = await request(port, 'GET', '/metrics', {});
        assert.equal(scrape.status, 200);
        const line = scrape.body
          .split('\n')
          .find(
            (l) =>
              l.startsWith('clubhouse_http_requests_total{') &&
              l.includes('route="/api/auth/check"') &&
              l.includes('status="200"'),
          );
        assert.equal(line?.split(' ').at(-1), '200', `summed over both workers: ${line}`);
      }

      // SIGKILL one worker: the primary forks a replacement, and sessions live on (shared SQLite).
      process.kill(workers[0]!, 'SIGKILL');
      await waitFor('a replacement worker', () => servingPids().length === 3);
      const replacement = servingPids()[2]!;
      assert.ok(!workers.includes(replacement));
      assert.ok(lines.some((line) => line['msg'] === 'worker died unexpectedly; replacing it'));
      await checkAll(100);

      server.child.kill('SIGTERM');
      assert.equal(await server.exited, 0, server.output());
      for (const pid of [workers[1]!, replacement]) {
        assert.throws(() => process.kill(pid, 0), /ESRCH/, `worker ${pid} is gone`);
      }
    } finally {
      await cluster.stop();
    }
  });
});
