// Contract §3 (as session-cache.test.ts does for §2): the group endpoints are answered
// from each process's memory on SQLite, yet a change made anywhere — another app on the same file,
// the clubhouse command in this process or as a process of its own, an import — is seen by the very
// next request in every process; so is a disabled user. Then the same under WORKERS=2: a real
// cluster, changed by the clubhouse command as another process, every worker asked right after.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCli } from '../../src/cli/main.ts';
import { applyImport } from '../../src/groups/import.ts';
import { dovecotEnv, fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { postLogin, startCluster, type TestCluster } from '../helpers/cluster.ts';
import { type Dovecot, startDovecot, testUser } from '../helpers/dovecot.ts';
import { clubhouseRun } from '../helpers/instances.ts';
import { groupListFromMemory } from '../helpers/memory.ts';

const group = (id: number, name: string, type: 0 | 1 = 0) => ({
  id,
  name,
  description: `About ${name}.`,
  short_description: '',
  activities: '',
  type,
});
const FIXTURE = {
  groups: [group(1, 'Chess Club'), group(3, 'Biology 2B', 1), group(7, 'Seven'), group(9, 'Choir')],
  memberships: [
    { group: 1, username: 'alice', status: 1 },
    { group: 7, username: 'alice', status: 2 },
    { group: 9, username: 'bob', status: 1 },
  ],
};

const names = (body: string) => (JSON.parse(body) as { name: string }[]).map((g) => g.name);

describe('the group cache across processes: two apps on one file, and the clubhouse command', () => {
  let a: TestApp;
  let b: TestApp;
  let cookie: string;
  let dir: string;
  before(async () => {
    a = await startTestApp({ authenticator: fakeAuthenticator({ alice: 'pw', bob: 'pw' }) });
    b = await startTestApp({
      authenticator: fakeAuthenticator({ alice: 'pw' }),
      env: { DATABASE_URL: a.config.databaseUrl },
    });
    assert.equal((await applyImport(a.stores, FIXTURE, 'lower')).ok, true);
    ({ cookie } = await loginAs(a.fastify, 'alice', 'pw'));
    dir = mkdtempSync(join(tmpdir(), 'clubhouse-groups-xp-'));
  });
  after(async () => {
    await b?.close();
    await a?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const get = async (t: TestApp, url: string) => {
    const response = await t.fastify.inject({ url, headers: { cookie } });
    return { status: response.statusCode, body: response.body };
  };
  const cli = async (...argv: string[]) => {
    const errors: string[] = [];
    const code = await runCli(argv, a.storeEnv, { out: () => undefined, err: (text) => errors.push(text) });
    assert.equal(code, 0, errors.join('\n'));
  };
  /** Both apps answer `urls` from memory now (the change that follows must get past a warm cache). */
  const warm = async (urls: string[]) => {
    for (const t of [a, b]) {
      for (const url of urls) assert.equal((await get(t, url)).status, 200, url);
      assert.notEqual(await groupListFromMemory(t.stores, 'alice'), undefined, 'the list is in memory');
    }
  };
  const detail = async (t: TestApp, id: number) => {
    const answer = await get(t, `/api/group/${id}`);
    return answer.status === 200
      ? (JSON.parse(answer.body) as { name: string; member_status: number })
      : answer.status;
  };

  test('a group renamed by the clubhouse command: the very next request in both apps says the new name', async () => {
    await warm(['/api/group/', '/api/group/1']);
    await cli('group', 'update', '1', '--name', 'Chess Club II');
    for (const t of [a, b]) {
      assert.deepEqual(names((await get(t, '/api/group/')).body), ['Chess Club II', 'Seven']);
      assert.equal(((await detail(t, 1)) as { name: string }).name, 'Chess Club II');
    }
  });

  test('memberships set, changed and removed by the command are seen at once in both apps', async () => {
    await warm(['/api/group/', '/api/group/3', '/api/group/1']);
    await cli('member', 'set', '3', 'alice', 'member');
    for (const t of [a, b]) {
      assert.deepEqual(names((await get(t, '/api/group/')).body), ['Chess Club II', 'Biology 2B', 'Seven']);
      assert.equal(((await detail(t, 3)) as { member_status: number }).member_status, 1);
    }
    await warm(['/api/group/', '/api/group/3']);
    await cli('member', 'set', '3', 'alice', 'pending');
    for (const t of [a, b]) {
      assert.deepEqual(names((await get(t, '/api/group/')).body), ['Chess Club II', 'Seven']);
      assert.equal(((await detail(t, 3)) as { member_status: number }).member_status, 0);
    }
    await warm(['/api/group/', '/api/group/1']);
    await cli('member', 'remove', '1', 'alice');
    for (const t of [a, b]) {
      assert.deepEqual(names((await get(t, '/api/group/')).body), ['Seven']);
      assert.equal(((await detail(t, 1)) as { member_status: number }).member_status, -1);
    }
  });

  test('a group removed by the command is gone from the list and 404 in both apps', async () => {
    await warm(['/api/group/', '/api/group/7']);
    await cli('group', 'remove', '7');
    for (const t of [a, b]) {
      assert.deepEqual(names((await get(t, '/api/group/')).body), []);
      assert.equal(await detail(t, 7), 404);
    }
  });

  test('an import by the command is seen whole by the next request in both apps', async () => {
    await cli('member', 'set', '9', 'alice', 'admin');
    await warm(['/api/group/', '/api/group/9', '/api/group/3']);
    const file = join(dir, 'import.json');
    writeFileSync(
      file,
      JSON.stringify({
        groups: [group(3, 'Biology 3C', 1), group(9, 'Chamber Choir')],
        memberships: [{ group: 3, username: 'alice', status: 2 }],
      }),
    );
    await cli('import', file);
    for (const t of [a, b]) {
      assert.deepEqual(names((await get(t, '/api/group/')).body), ['Biology 3C', 'Chamber Choir']);
      assert.deepEqual(await detail(t, 3), { ...group(3, 'Biology 3C', 1), member_status: 2 });
    }
  });

  test('a change by the other app’s store is seen by this app at once, and by the other at once', async () => {
    await warm(['/api/group/', '/api/group/9']);
    await b.stores.groups.upsertGroup(group(9, 'Choir Again'));
    for (const t of [a, b])
      assert.deepEqual(names((await get(t, '/api/group/')).body), ['Biology 3C', 'Choir Again']);
  });

  test('the command as a process of its own: a rename, then a disabled user (403 in both apps)', async () => {
    await warm(['/api/group/', '/api/group/9']);
    const renamed = await clubhouseRun(['group', 'update', '9', '--name', 'Madrigals'], a.storeEnv);
    assert.equal(renamed.code, 0, renamed.output);
    for (const t of [a, b]) {
      assert.deepEqual(names((await get(t, '/api/group/')).body), ['Biology 3C', 'Madrigals']);
      assert.equal(((await detail(t, 9)) as { name: string }).name, 'Madrigals');
    }
    await warm(['/api/group/', '/api/group/9']);
    const disabled = await clubhouseRun(['user', 'disable', 'alice'], a.storeEnv);
    assert.equal(disabled.code, 0, disabled.output);
    for (const t of [a, b]) {
      for (const url of ['/api/group/', '/api/group/9']) {
        const answer = await get(t, url);
        assert.equal(answer.status, 403, url);
        assert.deepEqual(JSON.parse(answer.body), {
          detail: 'Authentication credentials were not provided.',
        });
      }
    }
  });
});

/** `method path` on a fresh connection (the cluster's round robin sees each), with a request id to trace. */
function askFresh(
  port: number,
  method: 'GET' | 'POST',
  path: string,
  cookie: string,
  requestId: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: { connection: 'close', cookie, 'x-request-id': requestId },
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end();
  });
}

describe('WORKERS=2 on SQLite: every worker sees a change made elsewhere on its very next request', () => {
  let dovecot: Dovecot;
  let cluster: TestCluster;
  let dir: string;
  let env: Record<string, string>;
  let cookie: string;
  let asked = 0;
  before(async () => {
    dovecot = await startDovecot();
    dir = mkdtempSync(join(tmpdir(), 'clubhouse-groups-workers-'));
    env = { DATABASE_URL: `sqlite:${join(dir, 'clubhouse.db')}` };
    const migrated = await clubhouseRun(['migrate'], env);
    assert.equal(migrated.code, 0, migrated.output);
    cluster = await startCluster({ ...env, ...dovecotEnv(dovecot) }, 2);
    const user = testUser('user001');
    const file = join(dir, 'groups.json');
    writeFileSync(
      file,
      JSON.stringify({
        groups: FIXTURE.groups,
        memberships: [
          { group: 1, username: 'user001', status: 1 },
          { group: 7, username: 'user001', status: 2 },
        ],
      }),
    );
    const imported = await clubhouseRun(['import', file], env);
    assert.equal(imported.code, 0, imported.output);
    const login = await postLogin(cluster.port, user.username, user.password);
    assert.equal(login.status, 200, login.body);
    const setCookie = login.headers['set-cookie'] ?? [];
    cookie = setCookie.map((c) => c.split(';')[0]).join('; ');
  });
  after(async () => {
    await cluster?.stop();
    await dovecot?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `path` asked `times` times on fresh connections: the answers, and the workers that gave them. */
  const ask = async (path: string, times: number) => {
    const answers: { status: number; body: string; id: string }[] = [];
    for (let i = 0; i < times; i++) {
      const id = `groups-xp-${++asked}`;
      answers.push({ ...(await askFresh(cluster.port, 'GET', path, cookie, id)), id });
    }
    // The workers write their log lines on their own time: wait for them (a deadline, not a timing).
    const lineOf = (id: string) =>
      cluster
        .output()
        .split('\n')
        .find((line) => line.includes(`"requestId":"${id}"`));
    const deadline = Date.now() + 30_000;
    while (answers.some((answer) => lineOf(answer.id) === undefined) && Date.now() < deadline)
      await sleep(20);
    const workers = new Set(
      answers.map((answer) => {
        const line = lineOf(answer.id);
        assert.ok(line !== undefined, `the log line of ${answer.id}`);
        return Number((JSON.parse(line) as { pid: number }).pid);
      }),
    );
    return { answers, workers };
  };
  /** Every worker answered `path`, and all alike: the body. */
  const askEveryWorker = async (path: string) => {
    const { answers, workers } = await ask(path, 4);
    assert.deepEqual([...workers].sort(), [...cluster.workers].sort(), `${path}: both workers answered`);
    const bodies = new Set(answers.map((answer) => `${answer.status} ${answer.body}`));
    assert.equal(bodies.size, 1, `${path}: every worker said the same: ${[...bodies].join(' | ')}`);
    return answers[0]!;
  };

  test('a logout on one worker ends the session on every worker at once', async () => {
    const user = testUser('user002');
    const login = await postLogin(cluster.port, user.username, user.password);
    assert.equal(login.status, 200, login.body);
    const mine = (login.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]).join('; ');
    const check = async () => {
      const statuses = [];
      for (let i = 0; i < 4; i++) {
        statuses.push(
          (await askFresh(cluster.port, 'GET', '/api/auth/check', mine, `logout-${++asked}`)).status,
        );
      }
      return statuses;
    };
    assert.deepEqual(await check(), [200, 200, 200, 200], 'cached by both workers');
    const out = await askFresh(cluster.port, 'POST', '/api/auth/logout', mine, `logout-${++asked}`);
    assert.equal(out.status, 200);
    assert.deepEqual(await check(), [403, 403, 403, 403]);
  });

  test('a rename, a membership, then a disabled user', async () => {
    // Both workers fill their caches (and answer the second round from memory).
    for (let round = 0; round < 2; round++) {
      assert.deepEqual(names((await askEveryWorker('/api/group/')).body), ['Chess Club', 'Seven']);
      assert.equal(JSON.parse((await askEveryWorker('/api/group/3')).body).member_status, -1);
    }
    const renamed = await clubhouseRun(['group', 'update', '1', '--name', 'Chess Club II'], env);
    assert.equal(renamed.code, 0, renamed.output);
    assert.deepEqual(names((await askEveryWorker('/api/group/')).body), ['Chess Club II', 'Seven']);

    const joined = await clubhouseRun(['member', 'set', '3', 'user001', 'admin'], env);
    assert.equal(joined.code, 0, joined.output);
    assert.equal(JSON.parse((await askEveryWorker('/api/group/3')).body).member_status, 2);
    assert.deepEqual(names((await askEveryWorker('/api/group/')).body), [
      'Chess Club II',
      'Biology 2B',
      'Seven',
    ]);

    assert.equal((await askEveryWorker('/api/auth/check')).status, 200);
    const disabled = await clubhouseRun(['user', 'disable', 'user001'], env);
    assert.equal(disabled.code, 0, disabled.output);
    for (const path of ['/api/group/', '/api/group/3', '/api/auth/check']) {
      assert.equal((await askEveryWorker(path)).status, 403, path);
    }
  });
});
