// Contract §11, `clubhouse sync groups` against the harness slapd, on every database store (the sync
// touches only the database: Redis sessions change nothing here). One directory per store, changed
// between runs as its administrator: the first run, a run that finds nothing changed (and writes
// nothing), a rename and move, a removal (kept, then removed), pending requests, a group created in
// clubhouse, a dry run that prints exactly what the real run then does, and faults midway that
// change nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Attribute, Change } from 'ldapts';
import type { Group } from '../../src/store/group-types.ts';
import type { Stores } from '../../src/store/types.ts';
import { pgPool, sqliteDb } from '../helpers/engines.ts';
import { startPageRelay } from '../helpers/ldap-page-relay.ts';
import { groupListFromMemory } from '../helpers/memory.ts';
import { DIRECTORY_USERS, PEOPLE_DN, type Slapd, startSlapd, userDn } from '../helpers/slapd.ts';
import { describeEachStore, type StoreData } from '../helpers/stores.ts';
import {
  asAdministrator,
  CLUBS_DN,
  GROUPS_DN,
  runSync,
  type SyncRun,
  syncDirectoryLdif,
  syncEnv,
} from '../helpers/sync-directory.ts';

/** Every row of groups, memberships and users, as text: what "nothing changed" compares. */
async function contents(stores: Stores): Promise<string> {
  const { groups, users, memberships } = await stores.groups.exportData();
  return JSON.stringify({ groups, users, memberships, synced: await syncedIds(stores) });
}

/** Group id → external id, read from the database itself. */
async function syncedIds(stores: Stores): Promise<Record<string, string | null>> {
  const rows = await rawRows(stores, 'SELECT id, external_id FROM groups ORDER BY id');
  return Object.fromEntries(rows.map((row) => [String(row['id']), row['external_id'] as string | null]));
}

async function rawRows(stores: Stores, sql: string): Promise<Record<string, unknown>[]> {
  if (stores.engine.database === 'sqlite') return sqliteDb(stores).prepare(sql).all();
  return (await pgPool(stores).query(sql)).rows;
}

/**
 * Proof that no row was written: SQLite's group generation (every insert, update or delete of a
 * group or membership moves it) and PostgreSQL's row versions (an update, even to the same values,
 * makes a new xmin); on both, the users' rows too.
 */
async function rowVersions(stores: Stores): Promise<string> {
  if (stores.engine.database === 'sqlite') {
    const generation = await rawRows(stores, 'SELECT value FROM group_generation');
    const users = await rawRows(stores, 'SELECT username, active, created_at FROM users ORDER BY username');
    return JSON.stringify({ generation, users });
  }
  const versions = [];
  // group_generation: a bump (any write to the three) would drop every instance's group memory.
  for (const table of ['groups', 'memberships', 'users', 'group_generation'])
    versions.push(await rawRows(stores, `SELECT xmin::text AS v FROM ${table} ORDER BY ctid`));
  return JSON.stringify(versions);
}

const byName = (groups: readonly Group[], name: string) => {
  const group = groups.find((g) => g.name === name);
  assert.ok(group, `no group ${name}`);
  return group;
};

/** The memberships of group `id` as `username:status`, sorted. */
async function members(stores: Stores, id: number): Promise<string[]> {
  const { memberships } = await stores.groups.exportData();
  return memberships
    .filter((m) => m.group === id)
    .map((m) => `${m.username}:${m.status}`)
    .sort();
}

function assertFailed(run: SyncRun, reason: RegExp) {
  assert.equal(run.code, 1, run.err.join('\n'));
  assert.match(run.err.join('\n'), reason);
  const logged = run.logs.find(
    (line) => line['msg'] !== undefined && String(line['msg']).startsWith('group sync failed'),
  );
  assert.ok(logged, 'the failure is logged');
  assert.equal(logged['level'], 50);
  assert.match(String((logged['groupSync'] as { reason: string }).reason), reason);
  assert.deepEqual(run.out, []);
}

describeEachStore('clubhouse sync groups against slapd', (store) => {
  let slapd: Slapd;
  let made: StoreData;
  let stores: Stores;
  let env: Record<string, string>;
  let localId: number;

  before(async () => {
    slapd = await startSlapd(DIRECTORY_USERS, { tls: false, ldif: syncDirectoryLdif() });
    made = await store.create();
    stores = await made.open();
    env = { ...made.env, ...syncEnv(slapd) };
    // contract §11: a group created in clubhouse is never touched, and its name never taken.
    localId = (
      await stores.groups.addGroup({
        id: null,
        name: 'Local Club',
        description: 'Ours.',
        short_description: '',
        activities: '',
        type: 0,
      })
    ).id;
    await stores.groups.setMembership({ group: localId, username: 'alice', status: 1 });
  });
  after(async () => {
    await stores?.close();
    await made?.drop();
    await slapd?.stop();
  });

  test('the first run makes the directory groups and memberships clubhouse’s, skipping and reporting what it cannot use', async () => {
    const run = await runSync(env);
    assert.equal(run.code, 0, run.err.join('\n'));
    assert.equal(
      run.out[0],
      'groups: 5 added, 0 changed, 0 removed, 0 kept; memberships: 11 added, 0 changed, 0 removed; users: 4 created; skipped: 4',
    );
    const skipped = run.out.filter((line) => line.startsWith('skipped ')).sort();
    assert.deepEqual(skipped, [
      `skipped cn=Chess Club,${CLUBS_DN} "cn=clubhouse,ou=services,dc=example,dc=org": outside the user base (LDAP_BASE_DN)`,
      `skipped cn=Chess Club,${CLUBS_DN} "uid=ghost,${PEOPLE_DN}": no entry with uid under the user base`,
      `skipped cn=Local Club,${GROUPS_DN}: the name "Local Club" is taken by a group created in clubhouse or kept as it is`,
      `skipped cn=staff,${GROUPS_DN} "bad name": username may not contain white space or control characters`,
    ]);
    const groups = await stores.groups.list();
    const chess = byName(groups, 'Chess Club');
    assert.deepEqual(chess, {
      id: chess.id,
      name: 'Chess Club',
      description: 'Games on Tuesdays.',
      short_description: 'Moves',
      activities: '',
      type: 0,
    });
    assert.ok(chess.id > localId, 'new groups take the ids after the largest');
    assert.deepEqual(await members(stores, chess.id), ['alice:1', 'bob:1', 'carol:2']);
    const biology = byName(groups, 'Biologie 2B – Zellen');
    assert.equal(biology.type, 1, 'matches LDAP_GROUP_CLASSROOM_FILTER');
    assert.equal(biology.description, 'Zellbiologie für Anfänger');
    assert.deepEqual(await members(stores, biology.id), ['alice:2', 'jürgen:1', 'uma:1']);
    // posixGroup memberUid, the fullwidth ＢＯＢ canonical as bob (contract §3).
    assert.deepEqual(await members(stores, byName(groups, 'staff').id), ['alice:1', 'bob:1', 'carol:1']);
    assert.deepEqual(await members(stores, localId), ['alice:1']);
    assert.equal((await syncedIds(stores))[String(localId)], null);
    const users = await stores.users.list();
    assert.ok(users.every((u) => u.active));
    assert.deepEqual(users.map((u) => u.username).sort(), ['alice', 'bob', 'carol', 'jürgen', 'uma']);
    const done = run.logs.find((line) => String(line['msg']).startsWith('group sync done'));
    assert.equal((done?.['groupSync'] as { groupsAdded: number }).groupsAdded, 5);
  });

  test('a second run with no directory change writes nothing: no row updated, no cache dropped', async () => {
    const before = await rowVersions(stores);
    const rows = await contents(stores);
    // The group memory holds alice's list; a write would make the next answer from memory miss.
    await stores.groups.listForMember('alice');
    const remembered = await groupListFromMemory(stores, 'alice');
    const run = await runSync(env);
    assert.equal(run.code, 0, run.err.join('\n'));
    assert.equal(
      run.out[0],
      'groups: 0 added, 0 changed, 0 removed, 0 kept; memberships: 0 added, 0 changed, 0 removed; users: 0 created; skipped: 4',
    );
    assert.equal(await rowVersions(stores), before);
    assert.equal(await contents(stores), rows);
    if (store.kind === 'sqlite') {
      assert.notEqual(remembered, undefined);
      assert.deepEqual(
        await groupListFromMemory(stores, 'alice'),
        remembered,
        'answered from memory: the memory was kept',
      );
    }
  });

  test('rename and move keep the id, pending requests stay, a dry run prints exactly what the real run does, a removed group is kept then removed', async () => {
    const groups = await stores.groups.list();
    const chess = byName(groups, 'Chess Club');
    const drama = byName(groups, 'Drama');
    const leaving = byName(groups, 'Leaving');
    // Pending requests recorded in clubhouse (contract §11: kept).
    await stores.groups.setMembership({ group: chess.id, username: 'dave', status: 0 });
    await stores.groups.setMembership({ group: chess.id, username: 'uma', status: 0 });
    await asAdministrator(slapd, async (client) => {
      await client.modifyDN(`cn=Drama,${GROUPS_DN}`, `cn=Theatre,${CLUBS_DN}`);
      await client.del(`cn=Leaving,${GROUPS_DN}`);
      await client.modify(`cn=Chess Club,${CLUBS_DN}`, [
        new Change({
          operation: 'delete',
          modification: new Attribute({ type: 'member', values: [userDn({ username: 'bob' })] }),
        }),
      ]);
    });
    const unchanged = await contents(stores);
    const dry = await runSync(env, '--dry-run', '--keep-removed');
    assert.equal(dry.code, 0, dry.err.join('\n'));
    assert.equal(dry.out[0], 'dry run: nothing written');
    assert.equal(await contents(stores), unchanged, 'a dry run writes nothing');
    const real = await runSync(env, '--keep-removed');
    assert.equal(real.code, 0, real.err.join('\n'));
    assert.deepEqual(real.out, dry.out.slice(1));
    assert.equal(
      real.out[0],
      'groups: 0 added, 1 changed, 0 removed, 1 kept; memberships: 0 added, 0 changed, 1 removed; users: 0 created; skipped: 4',
    );
    assert.ok(real.out.includes(`group changed ${drama.id} "Theatre" (was "Drama"): name`));
    assert.ok(real.out.includes(`group kept ${leaving.id} "Leaving" (gone from the directory)`));
    assert.ok(real.out.includes(`membership removed ${chess.id} bob 1`));
    const after = await stores.groups.list();
    assert.equal(byName(after, 'Theatre').id, drama.id);
    assert.deepEqual(await members(stores, drama.id), ['carol:1']);
    assert.deepEqual(await members(stores, chess.id), ['alice:1', 'carol:2', 'dave:0', 'uma:0']);
    assert.deepEqual(await members(stores, leaving.id), ['bob:1']);
    assert.deepEqual(await members(stores, localId), ['alice:1']);

    const removing = await runSync(env);
    assert.equal(removing.code, 0, removing.err.join('\n'));
    assert.ok(removing.out.includes(`group removed ${leaving.id} "Leaving"`));
    assert.equal(
      (await stores.groups.list()).find((g) => g.id === leaving.id),
      undefined,
    );
    assert.deepEqual(await members(stores, leaving.id), []);
    assert.equal(byName(await stores.groups.list(), 'Local Club').id, localId);
  });

  test('faults midway (wrong service password, a page that fails, a directory that stops answering or cuts) change nothing and exit 1 with the reason printed and logged', async () => {
    await asAdministrator(slapd, async (client) => {
      await client.add(`cn=Fresh,${GROUPS_DN}`, {
        objectClass: 'groupOfNames',
        cn: 'Fresh',
        member: userDn({ username: 'alice' }),
      });
    });
    const relay = await startPageRelay(slapd.plainPort);
    try {
      const before = await contents(stores);
      const versions = await rowVersions(stores);
      assertFailed(await runSync({ ...env, LDAP_BIND_PASSWORD: 'wrong' }), /service account bind refused/);
      const viaRelay = { ...env, ...syncEnv(slapd, relay.port) };
      relay.setFault({ kind: 'fail', afterPages: 1, code: 51 });
      assertFailed(await runSync(viaRelay), /upstream_unavailable: LDAP result 51/);
      relay.setFault({ kind: 'stall', afterPages: 2 });
      assertFailed(
        await runSync({ ...viaRelay, GROUP_SYNC_TIMEOUT_MS: '1500' }),
        /upstream_unavailable: no answer within 1500 ms/,
      );
      relay.setFault({ kind: 'cut', afterPages: 3 });
      assertFailed(await runSync(viaRelay), /upstream_unavailable/);
      // The second connection's user search fails after the groups' connection has read them all.
      relay.setFault({ kind: 'fail', afterPages: 6, code: 52 });
      assertFailed(await runSync(viaRelay), /upstream_unavailable: LDAP result 52/);
      assert.equal(await contents(stores), before);
      assert.equal(await rowVersions(stores), versions);
      relay.setFault({ kind: 'none' });
      const healed = await runSync(viaRelay);
      assert.equal(healed.code, 0, healed.err.join('\n'));
      assert.match(healed.out[0] ?? '', /^groups: 1 added, 0 changed/);
      assert.ok(relay.pages() > 6, 'the reads were paged');
    } finally {
      await relay.close();
    }
  });

  test('a member DN is read back as a username only when it is under the user base', async () => {
    // The people OU's DN is under the base but is no user: reported, as a DN of another tree is.
    await asAdministrator(slapd, async (client) => {
      await client.add(`cn=Odd,${GROUPS_DN}`, {
        objectClass: 'groupOfNames',
        cn: 'Odd',
        member: [PEOPLE_DN, userDn({ username: 'bob' })],
      });
    });
    const run = await runSync(env);
    assert.equal(run.code, 0, run.err.join('\n'));
    assert.ok(
      run.out.some((line) =>
        line.startsWith(`skipped cn=Odd,${GROUPS_DN} "${PEOPLE_DN}": no entry with uid`),
      ),
    );
    assert.deepEqual(await members(stores, byName(await stores.groups.list(), 'Odd').id), ['bob:1']);
  });
});

describe('sync groups without a directory', () => {
  test('exits 1 saying what to set', async () => {
    const run = await runSync({ DATABASE_URL: 'sqlite::memory:' });
    assert.equal(run.code, 1);
    assert.match(run.err.join('\n'), /set LDAP_GROUP_BASE_DN/);
  });
});
