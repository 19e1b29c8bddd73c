// The group routes send the group memory's JSON as is. The answer must be the one the route's
// response schema serializes, byte for byte, with the same status and headers: each request below is
// made twice, first answered from the database (a miss), then from memory (a hit, the JSON kept), and
// the two are compared whole. A detail's miss is serialized by Fastify from the schema; a list's miss
// is answered with the list the store's read kept (routes/groups.ts), so a list's body is also
// compared with what Fastify's serializer writes, from the route's schema, for the store's rows.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import Fastify, { type LightMyRequestResponse } from 'fastify';
import { applyImport } from '../../src/groups/import.ts';
import { GROUP_SCHEMAS } from '../../src/routes/groups-schemas.ts';
import type { Group, GroupStore } from '../../src/store/group-types.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';

const MAX_ID = 2_147_483_647;
const GROUPS = [
  {
    id: 1,
    name: 'Chess Club',
    description: 'Casual games.',
    short_description: 'Moves.',
    activities: '',
    type: 0,
  },
  { id: 3, name: 'Biology 2B', description: 'Cells.', short_description: '', activities: 'Labs.', type: 1 },
  { id: 7, name: 'Pending', description: '', short_description: '', activities: '', type: 0 },
  {
    id: 30,
    // JSON escapes, control characters, U+2028, astral code points, a ZWJ sequence, right-to-left.
    name: 'Ünïcødé 🎲 👩‍👩‍👧 e\u0301 مرحبا "q" \\ \ufffd',
    description: 'line 1\nline 2\t"quoted" \\ back\u2028slash \u0001 \u001f \u007f \u200b',
    short_description: '</script><!--',
    activities: 'x'.repeat(10_000),
    type: 0,
  },
  { id: MAX_ID, name: 'Largest id', description: '', short_description: '', activities: '', type: 1 },
];
const MEMBERSHIPS = [
  { group: MAX_ID, username: 'alice', status: 2 },
  { group: 30, username: 'alice', status: 1 },
  { group: 7, username: 'alice', status: 0 },
  { group: 1, username: 'alice', status: 1 },
];

/** Everything a client receives, but the request id (new on every request). */
function wire(response: LightMyRequestResponse) {
  const { 'x-request-id': _, date: __, ...headers } = response.headers;
  return { status: response.statusCode, headers, body: response.rawPayload.toString('hex') };
}

/** `groups` as the list route's response schema has Fastify serialize them. */
async function schemaList(groups: readonly Group[]): Promise<string> {
  const app = Fastify();
  app.get('/', { schema: { response: GROUP_SCHEMAS.groupList.response } }, async () => groups);
  try {
    return (await app.inject({ url: '/' })).rawPayload.toString('hex');
  } finally {
    await app.close();
  }
}

const isList = (url: string) => /^\/api\/group\/?$/.test(url);

describe('the group routes answer from memory with the bytes the schema serializes', () => {
  let t: TestApp;
  let cookie: string;
  /** Calls that reached the database, and answers from memory, since the last reset. */
  const counts = { database: 0, memory: 0 };
  /** The store's own listForMember, uncounted: the rows a list's body is compared with. */
  let rowsOf: (username: string) => Promise<Group[]>;
  before(async () => {
    t = await startTestApp({ authenticator: fakeAuthenticator({ alice: 'pw', bob: 'pw' }) });
    const imported = await applyImport(t.stores, { groups: GROUPS, memberships: MEMBERSHIPS }, 'lower');
    assert.equal(imported.ok, true);
    ({ cookie } = await loginAs(t.fastify, 'alice', 'pw'));
    // Count what the route asks of the store, without changing what it answers.
    const store = t.stores.groups as GroupStore & Record<string, (...args: never[]) => unknown>;
    rowsOf = store.listForMember.bind(store);
    for (const name of ['listForMember', 'detail'] as const) {
      const original = store[name].bind(store) as (...args: unknown[]) => unknown;
      Object.assign(store, {
        [name]: (...args: unknown[]) => {
          counts.database++;
          return original(...args);
        },
      });
    }
    const memory = t.stores.memory.groups!;
    for (const name of ['list', 'detail'] as const) {
      const original = memory[name].bind(memory) as (...args: unknown[]) => string | undefined;
      Object.assign(memory, {
        [name]: (...args: unknown[]) => {
          const answer = original(...args);
          if (answer !== undefined) counts.memory++;
          return answer;
        },
      });
    }
  });
  after(() => t.close());

  /** The request once from the database, then once from memory; both answers. */
  async function missThenHit(method: 'GET' | 'HEAD', url: string) {
    // A change to alice's memberships drops every answer of hers kept (the list and every detail
    // are built from them): one of them changed back and forth.
    await t.stores.groups.setMembership({ group: MAX_ID, username: 'alice', status: 1 });
    await t.stores.groups.setMembership({ group: MAX_ID, username: 'alice', status: 2 });
    counts.database = 0;
    counts.memory = 0;
    const miss = await t.fastify.inject({ method, url, headers: { cookie } });
    // A list's miss is answered with what the store's read kept (read from memory once).
    const kept = isList(url) ? 1 : 0;
    assert.deepEqual(counts, { database: 1, memory: kept }, `${method} ${url}: the first from the database`);
    const hit = await t.fastify.inject({ method, url, headers: { cookie } });
    assert.deepEqual(counts, { database: 1, memory: kept + 1 }, `${method} ${url}: the second from memory`);
    return { miss, hit };
  }

  for (const method of ['GET', 'HEAD'] as const) {
    for (const url of ['/api/group/', '/api/group', '/api/group/1', '/api/group/007/', '/api/group/30']) {
      test(`${method} ${url}`, async () => {
        const { miss, hit } = await missThenHit(method, url);
        assert.equal(miss.statusCode, 200);
        assert.deepEqual(wire(hit), wire(miss));
        if (isList(url) && method === 'GET')
          assert.equal(wire(hit).body, await schemaList(await rowsOf('alice')));
      });
    }
  }

  test('the detail of a pending membership, a group of others, the largest id', async () => {
    for (const [url, status] of [
      ['/api/group/7', 0],
      ['/api/group/3', -1],
      [`/api/group/${MAX_ID}`, 2],
    ] as const) {
      const { miss, hit } = await missThenHit('GET', url);
      assert.equal((miss.json() as { member_status: number }).member_status, status);
      assert.deepEqual(wire(hit), wire(miss), url);
    }
  });

  test('an unknown group is 404 from the database every time (misses are not remembered)', async () => {
    for (let i = 0; i < 2; i++) {
      counts.database = 0;
      const response = await t.fastify.inject({ url: '/api/group/999', headers: { cookie } });
      assert.equal(response.statusCode, 404);
      assert.deepEqual(response.json(), { detail: 'Not found.' });
      assert.equal(counts.database, 1);
    }
  });

  test('any group content: the answer from memory is the schema’s, byte for byte', async () => {
    const text = (maxLength: number) =>
      fc.oneof(fc.string({ unit: 'binary', maxLength }), fc.string({ unit: 'grapheme', maxLength }));
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          name: text(200).filter((name) => name.length > 0 && name.trim() !== ''),
          description: text(300),
          short_description: text(100),
          activities: text(300),
          type: fc.constantFrom(0, 1),
        }),
        fc.constantFrom(0, 1, 2),
        async (fields, status) => {
          const imported = await applyImport(
            t.stores,
            { groups: [{ id: 40, ...fields }], memberships: [{ group: 40, username: 'bob', status }] },
            'lower',
          );
          if (!imported.ok) return; // a name the import refuses (control characters, length)
          const bob = (await loginAs(t.fastify, 'bob', 'pw')).cookie;
          for (const url of ['/api/group/', '/api/group/40']) {
            // Written again as it is: bob's answers are read from the database next.
            await t.stores.groups.setMembership({ group: 40, username: 'bob', status });
            const miss = await t.fastify.inject({ url, headers: { cookie: bob } });
            const hit = await t.fastify.inject({ url, headers: { cookie: bob } });
            assert.equal(miss.statusCode, 200);
            assert.deepEqual(wire(hit), wire(miss), url);
            if (isList(url)) assert.equal(wire(hit).body, await schemaList(await rowsOf('bob')), url);
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
