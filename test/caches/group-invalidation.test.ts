// What a change drops from another instance's group memory: exactly the answers it touched
// (docs/freshness.md, the group change log). Two instances on one database; after each change on
// the first (a join, an approval, a text edit) and by an operator's SQL, the second's very next
// answers that the change touched come from the database with the new state, and the answers it did
// not touch still come from memory. Both directions can fail: dropping too little answers an old
// state, dropping too much reads the database where memory was still right. What reached the store
// and what memory answered are counted by wrapping both, as groups-cached-json.test.ts does.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { applyImport } from '../../src/groups/import.ts';
import { GROUP_LOG } from '../../src/store/freshness/group-log.ts';
import type { GroupStore } from '../../src/store/group-types.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { pgPool, sqliteDb } from '../helpers/engines.ts';
import { storeOf } from '../helpers/stores.ts';

const USERS = ['alice', 'bob', 'carol', 'dave'] as const;
type User = (typeof USERS)[number];

const group = (id: number, name: string) => ({
  id,
  name,
  description: `About ${name}.`,
  short_description: '',
  activities: '',
  type: 0 as const,
});
const FIXTURE = {
  groups: [group(1, 'Chess Club'), group(2, 'Choir')],
  memberships: [
    { group: 1, username: 'alice', status: 2 as const },
    { group: 1, username: 'bob', status: 1 as const },
    { group: 2, username: 'alice', status: 2 as const },
    { group: 2, username: 'dave', status: 1 as const },
  ],
};

/** Where an answer came from: `memory`, or `database` (a miss, filled from the store). */
type Source = 'memory' | 'database';

for (const kind of ['sqlite', 'postgres', 'redis-postgres'] as const) {
  const store = storeOf(kind);
  describe(`a change drops only the group answers it touched [${store.name}]`, () => {
    let first: TestApp;
    let second: TestApp;
    const cookies = new Map<User, string>();
    /** The sources of the second instance's answers since the last `read`. */
    const sources: Source[] = [];

    before(async () => {
      const passwords = Object.fromEntries(USERS.map((u) => [u, 'pw']));
      first = await startTestApp({ store, authenticator: fakeAuthenticator(passwords) });
      second = await startTestApp({ env: first.storeEnv, authenticator: fakeAuthenticator(passwords) });
      for (const username of USERS)
        cookies.set(username, (await loginAs(first.fastify, username, 'pw')).cookie);
      assert.equal((await applyImport(first.stores, FIXTURE, 'lower')).ok, true);
      const groups = second.stores.groups as GroupStore & Record<string, (...args: never[]) => unknown>;
      for (const name of ['listForMember', 'detail'] as const) {
        const original = groups[name].bind(groups) as (...args: unknown[]) => unknown;
        Object.assign(groups, {
          [name]: (...args: unknown[]) => {
            sources.push('database');
            return original(...args);
          },
        });
      }
      const memory = second.stores.memory.groups!;
      for (const name of ['list', 'detail'] as const) {
        const original = memory[name].bind(memory) as (...args: unknown[]) => unknown;
        Object.assign(memory, {
          [name]: (...args: unknown[]) => {
            const answer = original(...args);
            if (answer !== undefined) sources.push('memory');
            return answer;
          },
        });
      }
    });
    after(async () => {
      await second?.close();
      await first?.close();
    });

    const headers = (username: User) => ({ cookie: cookies.get(username) ?? '' });
    /** One GET on the second instance: its body, and where the answer came from. */
    const read = async (username: User, url: string) => {
      sources.length = 0;
      const response = await second.fastify.inject({ url, headers: headers(username) });
      assert.equal(response.statusCode, 200, `${url} for ${username}: ${response.body}`);
      const from = sources.includes('database') ? 'database' : sources.includes('memory') ? 'memory' : 'none';
      return { body: response.json(), from };
    };
    /** The ids listed, with the descriptions: a list built from an old group's JSON shows its old text. */
    const list = async (username: User) => {
      const { body, from } = await read(username, '/api/group/');
      return {
        ids: (body as { id: number; description: string }[]).map((g) => `${g.id}: ${g.description}`),
        from,
      };
    };
    const detail = async (username: User, id: number) => {
      const { body, from } = await read(username, `/api/group/${id}`);
      const { member_status: status, description } = body as { member_status: number; description: string };
      return { status, description, from };
    };
    const members = async (id: number) =>
      (
        (await read('alice', `/api/group/${id}/members`)).body as {
          username: string;
          member_status: number;
        }[]
      )
        .map((m) => `${m.username}:${m.member_status}`)
        .sort();
    /** Every list and detail on the second instance, read twice: the second read is from memory. */
    const warm = async () => {
      for (let round = 0; round < 2; round++)
        for (const username of USERS) {
          const listed = await list(username);
          if (round === 1) assert.equal(listed.from, 'memory', `${username}'s list kept`);
          for (const id of [1, 2]) {
            const shown = await detail(username, id);
            if (round === 1) assert.equal(shown.from, 'memory', `${username}'s detail of ${id} kept`);
          }
        }
    };
    const write = async (username: User, method: 'POST' | 'PUT' | 'PATCH', url: string, body?: unknown) => {
      const response = await first.fastify.inject({
        method,
        url,
        headers: {
          ...headers(username),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });
      assert.ok(response.statusCode < 300, `${method} ${url}: ${response.statusCode} ${response.body}`);
    };

    const CHESS = '1: About Chess Club.';
    const CHOIR = '2: About Choir.';

    // The first answer a change touched comes from the database; what is then rebuilt from memory
    // (the fill keeps the user's memberships and their groups) must be the new state too.
    test('a join and its approval drop the joiner’s answers, and no one else’s', async () => {
      await warm();
      await write('carol', 'POST', '/api/group/1/membership');
      assert.deepEqual(await list('carol'), { ids: [], from: 'database' }, 'a request is not listed');
      assert.deepEqual(await detail('carol', 1), {
        status: 0,
        description: 'About Chess Club.',
        from: 'memory',
      });
      assert.deepEqual(await detail('bob', 1), {
        status: 1,
        description: 'About Chess Club.',
        from: 'memory',
      });
      assert.deepEqual(await list('bob'), { ids: [CHESS], from: 'memory' });
      assert.deepEqual(await list('alice'), { ids: [CHESS, CHOIR], from: 'memory' });
      assert.deepEqual(await members(1), ['alice:2', 'bob:1', 'carol:0']);

      await write('alice', 'PUT', '/api/group/1/members/carol', { member_status: 1 });
      assert.deepEqual(await detail('carol', 1), {
        status: 1,
        description: 'About Chess Club.',
        from: 'database',
      });
      assert.deepEqual(await list('carol'), { ids: [CHESS], from: 'memory' }, 'approved: listed at once');
      assert.deepEqual(await detail('bob', 1), {
        status: 1,
        description: 'About Chess Club.',
        from: 'memory',
      });
      assert.deepEqual(await detail('dave', 1), {
        status: -1,
        description: 'About Chess Club.',
        from: 'memory',
      });
      assert.deepEqual(await list('bob'), { ids: [CHESS], from: 'memory' });
      assert.deepEqual(await list('dave'), { ids: [CHOIR], from: 'memory' });
      assert.deepEqual(await members(1), ['alice:2', 'bob:1', 'carol:1']);
    });

    test('a group’s texts edited drop its JSON and every list holding it, and nothing else', async () => {
      await warm();
      await write('alice', 'PATCH', '/api/group/1/texts', { description: 'Now with clocks.' });
      const clocks = '1: Now with clocks.';
      assert.deepEqual(await list('dave'), { ids: [CHOIR], from: 'memory' }, 'dave is not in group 1');
      assert.deepEqual(await detail('dave', 2), { status: 1, description: 'About Choir.', from: 'memory' });
      assert.deepEqual(await detail('dave', 1), {
        status: -1,
        description: 'Now with clocks.',
        from: 'database',
      });
      // Group 1's JSON is kept again (the fill above): the lists holding it are built anew from it.
      assert.deepEqual(await list('bob'), { ids: [clocks], from: 'memory' });
      assert.deepEqual(await list('carol'), { ids: [clocks], from: 'memory' });
      assert.deepEqual(await list('alice'), { ids: [clocks, CHOIR], from: 'memory' });
      assert.deepEqual(await detail('bob', 1), {
        status: 1,
        description: 'Now with clocks.',
        from: 'memory',
      });
    });

    test('a membership an operator inserts with SQL is seen at once, and drops only its user’s answers', async () => {
      await warm();
      const sql = "INSERT INTO memberships (username, group_id, status) VALUES ('dave', 1, 1)";
      if (kind === 'sqlite') sqliteDb(first.stores).prepare(sql).run();
      else await pgPool(first.stores).query(sql);
      assert.deepEqual(await list('dave'), { ids: ['1: Now with clocks.', CHOIR], from: 'database' });
      assert.deepEqual(await detail('dave', 1), {
        status: 1,
        description: 'Now with clocks.',
        from: 'memory',
      });
      assert.deepEqual(await list('bob'), { ids: ['1: Now with clocks.'], from: 'memory' });
      assert.deepEqual(await members(1), ['alice:2', 'bob:1', 'carol:1', 'dave:1']);
    });

    // The search's folded text is no answer's: writing it (the search fills it) drops nothing, where
    // a change of a column an answer shows, by anyone, drops its group.
    test('a search filling every group’s folded text drops nothing; a type changed by SQL drops its group', async () => {
      await warm();
      const operator = async (sql: string) => {
        if (kind === 'sqlite') sqliteDb(first.stores).prepare(sql).run();
        else await pgPool(first.stores).query(sql);
      };
      await operator('UPDATE groups SET search_text = NULL');
      const found = await first.fastify.inject({ url: '/api/groups?q=choir', headers: headers('alice') });
      assert.equal(found.statusCode, 200, found.body);
      assert.equal((found.json() as { count: number }).count, 1);
      for (const username of USERS) assert.equal((await list(username)).from, 'memory', `${username}'s list`);
      assert.deepEqual(await detail('dave', 2), { status: 1, description: 'About Choir.', from: 'memory' });

      await operator('UPDATE groups SET type = 1 WHERE id = 2');
      const { body, from } = await read('dave', '/api/group/');
      assert.equal(from, 'database');
      assert.deepEqual(
        (body as { id: number; type: number }[]).map((g) => `${g.id}:${g.type}`),
        ['1:0', '2:1'],
      );
      assert.deepEqual(await list('bob'), { ids: ['1: Now with clocks.'], from: 'memory' });
    });
  });
}

// When the log cannot prove it holds every change since a reader's position, the reader drops
// everything: more changes than a catch-up reads at once (an instance idle through a bulk write),
// a generation moved by hand without an entry, a generation gone backwards (a restored backup). And
// the triggers keep the log to its last GROUP_LOG.keptGenerations generations.
for (const kind of ['sqlite', 'postgres'] as const) {
  const store = storeOf(kind);
  describe(`the group change log proves it is complete, or memory empties [${store.name}]`, () => {
    let first: TestApp;
    let second: TestApp;
    let cookie = '';
    let fromDatabase = 0;
    const sql = async (text: string) => {
      if (kind === 'sqlite') return sqliteDb(first.stores).prepare(text).all();
      return (await pgPool(first.stores).query(text)).rows;
    };
    /** `count` generations, each one change of group 2 (which bob is not in). */
    const changes = async (count: number) => {
      if (kind === 'postgres') {
        // In statements of 500 (each within the pool's statement timeout, under load too).
        for (let done = 0; done < count; done += 500)
          await sql(`DO $$ BEGIN FOR i IN 1..${Math.min(500, count - done)} LOOP
            UPDATE groups SET activities = i::text WHERE id = 2; END LOOP; END $$`);
        return;
      }
      const db = sqliteDb(first.stores);
      const update = db.prepare('UPDATE groups SET activities = ? WHERE id = 2');
      db.exec('BEGIN IMMEDIATE');
      for (let i = 0; i < count; i++) update.run(String(i));
      db.exec('COMMIT');
    };
    /** Bob's list on the second instance: whether it came from the database. */
    const bobsListFromDatabase = async () => {
      const before = fromDatabase;
      const response = await second.fastify.inject({ url: '/api/group/', headers: { cookie } });
      assert.equal(response.statusCode, 200);
      assert.deepEqual(
        (response.json() as { id: number }[]).map((g) => g.id),
        [1],
      );
      return fromDatabase > before;
    };

    before(async () => {
      const passwords = { alice: 'pw', bob: 'pw' };
      first = await startTestApp({ store, authenticator: fakeAuthenticator(passwords) });
      second = await startTestApp({ env: first.storeEnv, authenticator: fakeAuthenticator(passwords) });
      ({ cookie } = await loginAs(first.fastify, 'bob', 'pw'));
      assert.equal((await applyImport(first.stores, FIXTURE, 'lower')).ok, true);
      const groups = second.stores.groups as GroupStore & Record<string, (...args: never[]) => unknown>;
      const original = groups.listForMember.bind(groups);
      Object.assign(groups, {
        listForMember: (username: string) => {
          fromDatabase++;
          return original(username);
        },
      });
    });
    after(async () => {
      await second?.close();
      await first?.close();
    });

    test('a few changes to a group bob is not in leave his list in memory', async () => {
      await bobsListFromDatabase();
      assert.equal(await bobsListFromDatabase(), false);
      await changes(3);
      assert.equal(await bobsListFromDatabase(), false);
    });

    test('more changes than a catch-up reads at once: everything is dropped', async () => {
      await changes(GROUP_LOG.pageRows + 1);
      assert.equal(await bobsListFromDatabase(), true);
      assert.equal(await bobsListFromDatabase(), false);
    });

    test('a generation moved by hand, without an entry: everything is dropped', async () => {
      await sql('UPDATE group_generation SET value = value + 1');
      assert.equal(await bobsListFromDatabase(), true);
      assert.equal(await bobsListFromDatabase(), false);
      await changes(2);
      assert.equal(await bobsListFromDatabase(), false, 'from there on the log is whole again');
    });

    test('the entry where the reader stands is not the one it read (a restore that logged as many again): everything is dropped', async () => {
      assert.equal(await bobsListFromDatabase(), false);
      // The newest generation's entries replaced: the generation unchanged, its mark (least `at`) not.
      await sql(
        'UPDATE group_changes SET at = at - 1 WHERE generation = (SELECT value FROM group_generation)',
      );
      assert.equal(await bobsListFromDatabase(), true);
      assert.equal(await bobsListFromDatabase(), false);
    });

    test('a generation gone backwards: everything is dropped', async () => {
      await sql('UPDATE group_generation SET value = value - 2');
      assert.equal(await bobsListFromDatabase(), true);
      assert.equal(await bobsListFromDatabase(), false);
    });

    test('the triggers keep the last generations only, and every generation has an entry', async () => {
      await changes(GROUP_LOG.keptGenerations + 2 * GROUP_LOG.pruneEvery);
      const [row] = await sql(`SELECT (SELECT value FROM group_generation) AS generation,
        min(generation) AS first, count(DISTINCT generation) AS kept FROM group_changes`);
      const generation = Number(row!['generation']);
      const first = Number(row!['first']);
      assert.ok(first > generation - GROUP_LOG.keptGenerations - GROUP_LOG.pruneEvery, `first ${first}`);
      assert.ok(first <= generation - GROUP_LOG.keptGenerations + 1, `first ${first}`);
      assert.equal(Number(row!['kept']), generation - first + 1);
      assert.equal(await bobsListFromDatabase(), true, 'far behind: everything is dropped');
    });
  });
}
