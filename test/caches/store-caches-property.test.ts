// As a property: on PostgreSQL and on PostgreSQL + Redis, writes on two instances (logins,
// logouts, logout everywhere, revokes as the CLI does them, memberships and groups changed) in random
// order with reads in between, on either instance: every read on the raw path (from memory after the
// shared look) answers exactly what the Fastify route answers at that moment by asking the store.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { applyImport } from '../../src/groups/import.ts';
import { fakeAuthenticator, loginAs, type TestApp } from '../helpers/app.ts';
import { ask, startTwoInstances } from '../helpers/instances.ts';
import { storeOf } from '../helpers/stores.ts';

const USERS = ['alice', 'bob'] as const;
const PASSWORDS = { alice: 'pw', bob: 'pw' };
const GROUPS = [1, 2, 3] as const;

const group = (id: number, name: string) => ({
  id,
  name,
  description: '',
  short_description: '',
  activities: '',
  type: 0 as const,
});

const on = fc.constantFrom(0, 1);
const user = fc.constantFrom(...USERS);
const COMMAND = fc.oneof(
  fc.record({ op: fc.constant('login' as const), on, user }),
  fc.record({ op: fc.constant('logout' as const), on, session: fc.nat(20) }),
  fc.record({ op: fc.constant('everywhere' as const), on, user }),
  fc.record({ op: fc.constant('revoke' as const), on, user }),
  fc.record({
    op: fc.constant('member' as const),
    on,
    user,
    group: fc.constantFrom(...GROUPS),
    status: fc.constantFrom(-1, 0, 1, 2),
  }),
  fc.record({ op: fc.constant('rename' as const), on, group: fc.constantFrom(...GROUPS), name: fc.nat(5) }),
  fc.record({
    op: fc.constant('read' as const),
    on,
    session: fc.nat(20),
    url: fc.constantFrom('/api/auth/check', '/api/group/', '/api/group/1', '/api/group/2', '/api/group/3'),
  }),
);

for (const kind of ['postgres', 'redis-postgres'] as const) {
  describe(`random writes and reads on two instances agree with the store [${storeOf(kind).name}]`, () => {
    const apps: TestApp[] = [];
    const ports: number[] = [];
    before(async () => {
      for (const { app, port } of await startTwoInstances(storeOf(kind), {
        authenticator: fakeAuthenticator(PASSWORDS),
      })) {
        apps.push(app);
        ports.push(port);
      }
      const fixture = { groups: GROUPS.map((id) => group(id, `Group ${id}`)), memberships: [] };
      assert.equal((await applyImport(apps[0]!.stores, fixture, 'lower')).ok, true);
    });
    after(async () => {
      for (const app of apps.reverse()) await app.close();
    });

    test('every raw answer is the Fastify route answer of the same moment', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(COMMAND, { minLength: 5, maxLength: 30 }), async (commands) => {
          const cookies: { user: string; cookie: string }[] = [];
          const cookieOf = (n: number) =>
            cookies[n % Math.max(1, cookies.length)]?.cookie ?? 'sessionid=none';
          for (const command of commands) {
            const app = apps[command.on]!;
            switch (command.op) {
              case 'login':
                cookies.push({
                  user: command.user,
                  cookie: (await loginAs(app.fastify, command.user, 'pw')).cookie,
                });
                break;
              case 'logout':
                await app.fastify.inject({
                  method: 'POST',
                  url: '/api/auth/logout',
                  headers: { cookie: cookieOf(command.session) },
                });
                break;
              case 'everywhere':
                await app.sessions.endAll(command.user);
                break;
              case 'revoke':
                await app.stores.sessions.revokeUser(command.user);
                break;
              case 'member':
                if (command.status === -1)
                  await app.stores.groups.removeMembership(command.group, command.user);
                else
                  await app.stores.groups.setMembership({
                    group: command.group,
                    username: command.user,
                    status: command.status as 0 | 1 | 2,
                  });
                break;
              case 'rename':
                await app.stores.groups.upsertGroup(
                  group(command.group, `Group ${command.group}.${command.name}`),
                );
                break;
              case 'read': {
                const cookie = cookieOf(command.session);
                const raw = await ask(ports[command.on]!, command.url, cookie);
                const fresh = await app.fastify.inject({ url: command.url, headers: { cookie } });
                assert.deepEqual(
                  raw,
                  { status: fresh.statusCode, body: fresh.body },
                  JSON.stringify(command),
                );
                break;
              }
            }
          }
        }),
        { numRuns: 25 },
      );
    });
  });
}
