// Contract §13's "what every instance answers from the next request on", on PostgreSQL and on
// PostgreSQL with sessions in Redis: two instances and the clubhouse command as a process of its own.
// After each membership or text change on one, the very next request on the other answers the new
// state, on the raw read path (a real socket, from memory) and on the Fastify route (inject): the
// caller's group list and the detail's member_status (both kept in memory), the members list and the
// search (always read from the database). Then, as a property, random joins, approvals, promotions,
// demotions, removals and leaves on either instance, each answered as the contract's table says and
// each seen at once by the other instance.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { applyImport } from '../../src/groups/import.ts';
import { fakeAuthenticator, loginAs } from '../helpers/app.ts';
import { pgPool } from '../helpers/engines.ts';
import { ask, clubhouseProcess, type Instance, startTwoInstances } from '../helpers/instances.ts';
import { storeOf } from '../helpers/stores.ts';

const USERS = ['alice', 'bob', 'carol', 'dave'] as const;
type User = (typeof USERS)[number];
const PASSWORDS = Object.fromEntries(USERS.map((u) => [u, 'pw']));

const group = (id: number, name: string) => ({
  id,
  name,
  description: `About ${name}.`,
  short_description: '',
  activities: '',
  type: 0 as const,
});
const FIXTURE = {
  groups: [group(1, 'Chess Club'), group(2, 'Property Club')],
  memberships: [
    { group: 1, username: 'alice', status: 2 as const },
    { group: 1, username: 'bob', status: 1 as const },
    { group: 2, username: 'alice', status: 2 as const },
  ],
};

for (const kind of ['postgres', 'redis-postgres'] as const) {
  const store = storeOf(kind);
  describe(`membership changes across instances and the clubhouse command (contract §13) [${store.name}]`, () => {
    let a: Instance;
    let b: Instance;
    const cookies = new Map<User, string>();
    before(async () => {
      [a, b] = await startTwoInstances(store, { authenticator: fakeAuthenticator(PASSWORDS) });
      for (const username of USERS) {
        const { response, cookie } = await loginAs(a.app.fastify, username, 'pw');
        assert.equal(response.statusCode, 200);
        cookies.set(username, cookie);
      }
      assert.equal((await applyImport(a.app.stores, FIXTURE, 'lower')).ok, true);
    });
    after(async () => {
      await b?.app.close();
      await a?.app.close();
    });

    const cookie = (username: User) => cookies.get(username) ?? '';
    /** A write on `t` through its API. */
    const write = (
      t: Instance,
      username: User,
      method: 'POST' | 'PUT' | 'DELETE' | 'PATCH',
      url: string,
      body?: unknown,
    ) =>
      t.app.fastify.inject({
        method,
        url,
        headers: {
          cookie: cookie(username),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });
    /** The same GET on both paths of `t` (raw over a socket, and Fastify): they must agree. */
    const both = async (t: Instance, username: User, url: string) => {
      const raw = await ask(t.port, url, cookie(username));
      const viaFastify = await t.app.fastify.inject({ url, headers: { cookie: cookie(username) } });
      assert.deepEqual(raw, { status: viaFastify.statusCode, body: viaFastify.body }, `${url} on both paths`);
      assert.equal(raw.status, 200, `${url}: ${raw.body}`);
      return JSON.parse(raw.body);
    };
    const statusOn = async (t: Instance, username: User, id = 1): Promise<number> =>
      (await both(t, username, `/api/group/${id}`)).member_status;
    const listedOn = async (t: Instance, username: User, id = 1): Promise<boolean> =>
      (await both(t, username, '/api/group/')).some((g: { id: number }) => g.id === id);
    const membersOn = async (t: Instance, admin: User, id = 1) =>
      (await both(t, admin, `/api/group/${id}/members`)).map(
        (m: { username: string; member_status: number }) => `${m.username}:${m.member_status}`,
      );
    const searchedOn = async (t: Instance, username: User, q: string) =>
      (await both(t, username, `/api/groups?q=${encodeURIComponent(q)}`)).results.map(
        (g: { id: number; member_status: number }) => `${g.id}:${g.member_status}`,
      );
    /** Every page B may answer from memory, read once so that a change must get past it. */
    const warm = async (t: Instance) => {
      for (const username of USERS) {
        await both(t, username, '/api/group/');
        await both(t, username, '/api/group/1');
      }
    };

    test('each change on one instance, or by the command, is what the other answers next', async () => {
      await warm(b);
      assert.equal((await write(a, 'carol', 'POST', '/api/group/1/membership')).statusCode, 201);
      assert.equal(await statusOn(b, 'carol'), 0, 'asked on A, pending on B');
      assert.deepEqual(await membersOn(b, 'alice'), ['carol:0', 'alice:2', 'bob:1']);
      assert.deepEqual(await searchedOn(b, 'carol', 'chess'), ['1:0']);

      await warm(a);
      assert.equal(
        (await write(b, 'alice', 'PUT', '/api/group/1/members/carol', { member_status: 1 })).statusCode,
        200,
      );
      assert.equal(await statusOn(a, 'carol'), 1, 'approved on B, a member on A');
      assert.equal(await listedOn(a, 'carol'), true);
      assert.deepEqual(await searchedOn(a, 'carol', 'chess'), ['1:1']);

      await warm(b);
      assert.equal(
        (await write(a, 'alice', 'PUT', '/api/group/1/members/carol', { member_status: 2 })).statusCode,
        200,
      );
      assert.equal(await statusOn(b, 'carol'), 2, 'promoted on A');
      assert.deepEqual(await membersOn(b, 'carol'), ['alice:2', 'bob:1', 'carol:2'], 'and may list on B');

      await warm(b);
      await clubhouseProcess(['member', 'set', '1', 'carol', '1'], a.app.storeEnv);
      assert.equal(await statusOn(b, 'carol'), 1, 'demoted by the command');
      assert.deepEqual(await membersOn(a, 'alice'), ['alice:2', 'bob:1', 'carol:1']);

      await warm(a);
      assert.equal((await write(b, 'carol', 'DELETE', '/api/group/1/membership')).statusCode, 204);
      assert.equal(await statusOn(a, 'carol'), -1, 'left on B');
      assert.equal(await listedOn(a, 'carol'), false);

      await warm(b);
      await clubhouseProcess(['member', 'remove', '1', 'bob'], a.app.storeEnv);
      assert.equal(await statusOn(b, 'bob'), -1, 'removed by the command');
      assert.equal(await listedOn(b, 'bob'), false);

      await warm(b);
      const patched = await write(a, 'alice', 'PATCH', '/api/group/1/texts', {
        description: 'Now with clocks.',
      });
      assert.equal(patched.statusCode, 200, patched.body);
      assert.equal(
        (await both(b, 'dave', '/api/group/1')).description,
        'Now with clocks.',
        'texts edited on A',
      );
      assert.deepEqual(await searchedOn(b, 'dave', 'clocks'), ['1:-1']);
    });

    // The contract's table, as the model: what each request answers and what it leaves.
    type Op =
      | { readonly op: 'ask'; readonly on: 0 | 1; readonly user: User }
      | { readonly op: 'leave'; readonly on: 0 | 1; readonly user: User }
      | {
          readonly op: 'set';
          readonly on: 0 | 1;
          readonly user: User;
          readonly target: User;
          readonly status: 1 | 2;
        }
      | { readonly op: 'remove'; readonly on: 0 | 1; readonly user: User; readonly target: User };
    const user = fc.constantFrom(...USERS);
    const on = fc.constantFrom(0 as const, 1 as const);
    const OP: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ op: fc.constant('ask' as const), on, user }),
      fc.record({ op: fc.constant('leave' as const), on, user }),
      fc.record({
        op: fc.constant('set' as const),
        on,
        user,
        target: user,
        status: fc.constantFrom(1 as const, 2 as const),
      }),
      fc.record({ op: fc.constant('remove' as const), on, user, target: user }),
    );
    /** The answer the contract gives `op` on `model`, and the model after it. */
    function expected(model: Map<User, number>, op: Op): number {
      const status = (u: User) => model.get(u) ?? -1;
      const admins = [...model.values()].filter((s) => s === 2).length;
      const lastAdmin = (u: User) => status(u) === 2 && admins === 1;
      if (op.op === 'ask') {
        if (status(op.user) !== -1) return 200;
        model.set(op.user, 0);
        return 201;
      }
      if (op.op === 'leave') {
        if (lastAdmin(op.user)) return 409;
        model.delete(op.user);
        return 204;
      }
      if (status(op.user) !== 2) return 403;
      const from = status(op.target);
      if (op.op === 'remove') {
        if (lastAdmin(op.target)) return 409;
        model.delete(op.target);
        return 204;
      }
      if (from === -1) return 404;
      if (from === op.status) return 200;
      if (from === 0 && op.status === 2) return 409;
      if (lastAdmin(op.target)) return 409;
      model.set(op.target, op.status);
      return 200;
    }

    test('random joins, approvals and leaves on two instances: each answered by the table, each seen at once', async () => {
      const instances = () => [a, b] as const;
      await fc.assert(
        fc.asyncProperty(fc.array(OP, { minLength: 1, maxLength: 12 }), async (ops) => {
          // Group 2 from a known start: alice its only administrator.
          await pgPool(a.app.stores).query('DELETE FROM memberships WHERE group_id = 2');
          await pgPool(a.app.stores).query(
            "INSERT INTO memberships (username, group_id, status) VALUES ('alice', 2, 2)",
          );
          const model = new Map<User, number>([['alice', 2]]);
          for (const op of ops) {
            const t = instances()[op.on];
            const other = instances()[1 - op.on]!;
            const url =
              op.op === 'ask' || op.op === 'leave'
                ? '/api/group/2/membership'
                : `/api/group/2/members/${op.target}`;
            const method = op.op === 'ask' ? 'POST' : op.op === 'set' ? 'PUT' : 'DELETE';
            const answer = await write(
              t,
              op.user,
              method,
              url,
              op.op === 'set' ? { member_status: op.status } : undefined,
            );
            assert.equal(answer.statusCode, expected(model, op), `${JSON.stringify(op)}: ${answer.body}`);
            for (const username of USERS) {
              const want = model.get(username) ?? -1;
              assert.equal(
                await statusOn(other, username, 2),
                want,
                `${username} after ${JSON.stringify(op)}`,
              );
              assert.equal(await listedOn(other, username, 2), want === 1 || want === 2);
            }
          }
        }),
        { numRuns: 12 },
      );
    });
  });
}
