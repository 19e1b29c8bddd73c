// On PostgreSQL, and on PostgreSQL with sessions in Redis, each instance answers the check
// and the group pages from memory after one shared look at the stores; yet every change committed
// before a request began, by another instance or by the clubhouse command as a process of its own,
// is seen by that request: on the raw read path (a real socket) and on the Fastify route (inject).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SESSION_MAX_AGE_SECONDS } from '../../src/auth/sessions.ts';
import { runCli } from '../../src/cli/main.ts';
import { applyImport } from '../../src/groups/import.ts';
import { fakeAuthenticator, loginAs } from '../helpers/app.ts';
import { ask, clubhouseProcess, type Instance, startTwoInstances } from '../helpers/instances.ts';
import { storeOf } from '../helpers/stores.ts';

const PASSWORDS = { alice: 'pw', bob: 'pw' };

const group = (id: number, name: string) => ({
  id,
  name,
  description: `About ${name}.`,
  short_description: '',
  activities: '',
  type: 0 as const,
});
const FIXTURE = {
  groups: [group(1, 'Chess Club'), group(3, 'Biology'), group(7, 'Seven')],
  memberships: [
    { group: 1, username: 'alice', status: 1 as const },
    { group: 7, username: 'alice', status: 2 as const },
  ],
};

interface CountedInstance extends Instance {
  /** Answers given from memory on the raw path so far. */
  readonly fromMemory: () => number;
}

function counted({ app, port }: Instance): CountedInstance {
  let hits = 0;
  const remembered = app.sessions.fromMemory.bind(app.sessions);
  app.sessions.fromMemory = (id) => {
    const answer = remembered(id);
    if (typeof answer === 'string') hits++;
    return answer;
  };
  return { app, port, fromMemory: () => hits };
}

for (const kind of ['postgres', 'redis-postgres'] as const) {
  const store = storeOf(kind);
  describe(`the stores' caches across instances and the clubhouse command [${store.name}]`, () => {
    let a: CountedInstance;
    let b: CountedInstance;
    before(async () => {
      const [first, second] = await startTwoInstances(
        store,
        { authenticator: fakeAuthenticator(PASSWORDS) },
        { fixedClock: true },
      );
      a = counted(first);
      b = counted(second);
      assert.equal((await applyImport(a.app.stores, FIXTURE, 'lower')).ok, true);
    });
    after(async () => {
      await b?.app.close();
      await a?.app.close();
    });

    /** The same GET on both paths of `t`: they must agree, and the answer is returned. */
    const both = async (t: Instance, url: string, cookie: string) => {
      const raw = await ask(t.port, url, cookie);
      const viaFastify = await t.app.fastify.inject({ url, headers: { cookie } });
      assert.deepEqual(raw, { status: viaFastify.statusCode, body: viaFastify.body }, `${url} on both paths`);
      return raw;
    };
    /** B has the session and alice's groups in memory (so the change must get past a warm cache). */
    const warm = async (cookie: string) => {
      for (const url of ['/api/auth/check', '/api/group/', '/api/group/1', '/api/group/3']) {
        assert.equal((await ask(b.port, url, cookie)).status, 200, url);
      }
      const before = b.fromMemory();
      assert.equal((await ask(b.port, '/api/auth/check', cookie)).status, 200);
      assert.equal(b.fromMemory(), before + 1, 'B answered the check from memory');
    };
    const cli = async (...argv: string[]) => {
      const errors: string[] = [];
      const code = await runCli(argv, a.app.storeEnv, { out: () => {}, err: (text) => errors.push(text) });
      assert.equal(code, 0, errors.join('\n'));
    };
    const names = (body: string) => (JSON.parse(body) as { name: string }[]).map((g) => g.name);

    test('a logout on A: the very next request to B is refused on both paths', async () => {
      const { cookie } = await loginAs(a.app.fastify, 'alice', 'pw');
      await warm(cookie);
      await a.app.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } });
      assert.deepEqual(await ask(b.port, '/api/auth/check', cookie), { status: 403, body: '""' });
      assert.equal((await both(b, '/api/group/', cookie)).status, 403);
    });

    test('logout everywhere on A, and ending one session by its handle, are seen by B at once', async () => {
      const one = await loginAs(a.app.fastify, 'alice', 'pw');
      const two = await loginAs(a.app.fastify, 'alice', 'pw');
      await warm(one.cookie);
      await warm(two.cookie);
      const list = await a.app.fastify.inject({ url: '/api/auth/sessions', headers: { cookie: one.cookie } });
      const other = (list.json() as { id: string; current: boolean }[]).find((s) => !s.current)!;
      const ended = await a.app.fastify.inject({
        method: 'DELETE',
        url: `/api/auth/sessions/${other.id}`,
        headers: { cookie: one.cookie, 'x-csrftoken': one.csrftoken },
      });
      assert.equal(ended.statusCode, 204);
      assert.equal((await both(b, '/api/auth/check', two.cookie)).status, 403);
      assert.equal((await both(b, '/api/auth/check', one.cookie)).status, 200);
      const everywhere = await a.app.fastify.inject({
        method: 'POST',
        url: '/api/auth/logout-everywhere',
        headers: { cookie: one.cookie, 'x-csrftoken': one.csrftoken },
      });
      assert.equal(everywhere.statusCode, 200);
      assert.equal((await both(b, '/api/auth/check', one.cookie)).status, 403);
    });

    test('sessions revoke and user disable by the clubhouse command as a process of its own', async () => {
      const { cookie } = await loginAs(a.app.fastify, 'alice', 'pw');
      await warm(cookie);
      await clubhouseProcess(['sessions', 'revoke', 'alice'], a.app.storeEnv);
      assert.deepEqual(await ask(b.port, '/api/auth/check', cookie), { status: 403, body: '""' });
      assert.equal((await both(a, '/api/group/1', cookie)).status, 403);
      const again = await loginAs(a.app.fastify, 'alice', 'pw');
      await warm(again.cookie);
      await clubhouseProcess(['user', 'disable', 'alice'], a.app.storeEnv);
      assert.deepEqual(await ask(b.port, '/api/auth/check', again.cookie), { status: 403, body: '""' });
      assert.equal((await both(b, '/api/group/', again.cookie)).status, 403);
      await cli('user', 'enable', 'alice');
    });

    test('the 101st login on A ends the oldest session, and B refuses it at once (contract §9)', async () => {
      await cli('sessions', 'revoke', 'bob');
      const oldest = await loginAs(a.app.fastify, 'bob', 'pw');
      assert.equal((await ask(b.port, '/api/auth/check', oldest.cookie)).status, 200);
      for (let i = 0; i < 99; i++)
        await a.app.sessions.start('bob', { ip: null, userAgent: null }, { method: 'password' });
      assert.equal((await ask(b.port, '/api/auth/check', oldest.cookie)).status, 200, '100 live sessions');
      await loginAs(a.app.fastify, 'bob', 'pw');
      assert.equal((await both(b, '/api/auth/check', oldest.cookie)).status, 403);
    });

    test('groups and memberships changed by the command, a process of its own, and an import', async () => {
      const { cookie } = await loginAs(a.app.fastify, 'alice', 'pw');
      await warm(cookie);
      await clubhouseProcess(['member', 'set', '3', 'alice', 'member'], a.app.storeEnv);
      assert.deepEqual(names((await both(b, '/api/group/', cookie)).body), [
        'Chess Club',
        'Biology',
        'Seven',
      ]);
      await warm(cookie);
      await cli('group', 'update', '1', '--name', 'Chess Club II');
      assert.deepEqual(names((await both(b, '/api/group/', cookie)).body), [
        'Chess Club II',
        'Biology',
        'Seven',
      ]);
      assert.equal(JSON.parse((await both(b, '/api/group/1', cookie)).body).name, 'Chess Club II');
      await warm(cookie);
      const imported = await applyImport(
        a.app.stores,
        { groups: [group(3, 'Biology 2B')], memberships: [{ group: 7, username: 'alice', status: 0 }] },
        'lower',
      );
      assert.equal(imported.ok, true);
      assert.deepEqual(names((await both(b, '/api/group/', cookie)).body), ['Chess Club II', 'Biology 2B']);
      assert.equal(JSON.parse((await both(b, '/api/group/7', cookie)).body).member_status, 0);
      await cli('member', 'remove', '3', 'alice');
      assert.equal(JSON.parse((await both(b, '/api/group/3', cookie)).body).member_status, -1);
    });

    test('under a stream of concurrent reads on B (fills racing looks), every read begun after a write sees it', async () => {
      const { cookie } = await loginAs(a.app.fastify, 'bob', 'pw');
      const urls = ['/api/group/', '/api/group/1', '/api/group/3', '/api/auth/check'];
      let stop = false;
      // Reads that overlap the writes: they may see either side of a write, and keep the caches busy.
      const background = Promise.all(
        Array.from({ length: 8 }, async (_, n) => {
          while (!stop) await ask(b.port, urls[n % urls.length]!, cookie);
        }),
      );
      try {
        for (let i = 0; i < 30; i++) {
          const status = i % 2 === 0 ? 'member' : 'admin';
          const name = `Biology ${i}`;
          // --force: bob is the group's only administrator every other round (contract §13).
          await cli('member', 'set', '3', 'bob', status, '--force');
          await a.app.stores.groups.upsertGroup(group(3, name));
          const [list, detail] = await Promise.all([
            ask(b.port, '/api/group/', cookie),
            ask(b.port, '/api/group/3', cookie),
          ]);
          assert.deepEqual(names(list.body).includes(name), true, `round ${i}: ${list.body}`);
          assert.equal(JSON.parse(detail.body).member_status, i % 2 === 0 ? 1 : 2, `round ${i}`);
        }
      } finally {
        stop = true;
        await background;
      }
    });

    test('a session expired by the clock of B is refused by B from memory, with no log entry', async () => {
      const { cookie } = await loginAs(a.app.fastify, 'alice', 'pw');
      await warm(cookie);
      const start = b.app.clock.now;
      // B's clock stands still where it started: past the session's end as A's clock counts it.
      b.app.clock.now = Date.now() + SESSION_MAX_AGE_SECONDS * 1000 + 1000;
      try {
        assert.deepEqual(await ask(b.port, '/api/auth/check', cookie), { status: 403, body: '""' });
        assert.equal((await both(b, '/api/group/', cookie)).status, 403);
      } finally {
        b.app.clock.now = start;
      }
    });
  });
}
