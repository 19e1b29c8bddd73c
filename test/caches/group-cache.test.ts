// SQLite's group memory (src/store/sqlite/groups.ts) answers the group endpoints, yet a change
// committed by any connection is seen by the very next call. Two connections to one file, as two
// processes (or the CLI) would have: A serves from its memory, B writes; a third, without any memory,
// says what the database holds. Random writes by either, and after each one every answer A gives
// from memory must be the database's.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { GROUP_JSON } from '../../src/groups/json.ts';
import { ImportConflictError } from '../../src/store/errors.ts';
import { answerWindows, withWindowsOpen } from '../../src/store/freshness/gate.ts';
import { GROUP_MEMORY_LIMITS, type GroupMemoryLimits } from '../../src/store/freshness/group-memory.ts';
import type { Group, GroupStore, JsonBytes } from '../../src/store/group-types.ts';
import { sqlGroupStore } from '../../src/store/sql/groups.ts';
import { sqlUserStore } from '../../src/store/sql/users.ts';
import { type CommitWatch, unwatched, watchCommits } from '../../src/store/sqlite/commit-watch.ts';
import { openSqliteDatabase, sqliteDriver } from '../../src/store/sqlite/driver.ts';
import { sqliteCatchUp } from '../../src/store/sqlite/freshness.ts';
import { sqliteGroupMemory } from '../../src/store/sqlite/groups.ts';
import { openSqliteStores } from '../../src/store/sqlite/store.ts';
import type { Stores, UserStore } from '../../src/store/types.ts';
import { sqliteDb } from '../helpers/engines.ts';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'clubhouse-group-cache-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const USERS = ['ann', 'ben', 'cat'] as const;
const IDS = [1, 2, 3, 4] as const;
const NAMES = ['Chess', 'Go', 'Bridge', 'Art', 'Choir'] as const;

/** A group store with memory, answering as the raw read path asks it: after a catch-up. */
interface GroupsWithMemory extends GroupStore {
  listFromMemory(username: string): JsonBytes | undefined;
  detailFromMemory(id: number, username: string): JsonBytes | undefined;
}

function groupsWithMemory(db: DatabaseSync, watch: CommitWatch, limits: GroupMemoryLimits): GroupsWithMemory {
  const windows = answerWindows();
  const groups = sqliteGroupMemory(db, sqliteDriver(db), windows.groups, GROUP_JSON, limits);
  const catchUp = sqliteCatchUp(watch, { groups: groups.catchUp });
  const fromMemory = <T>(answer: () => T): T | undefined => {
    try {
      catchUp(['groups']);
    } catch {
      return undefined; // a failed catch-up: the store answers
    }
    return withWindowsOpen(windows, ['groups'], answer);
  };
  return {
    ...groups.store,
    listFromMemory: (username) => fromMemory(() => groups.answers.list(username)),
    detailFromMemory: (id, username) => fromMemory(() => groups.answers.detail(id, username)),
  };
}

interface Setup {
  readonly a: GroupsWithMemory;
  readonly aUsers: UserStore;
  readonly aDb: DatabaseSync;
  readonly b: Stores;
  readonly bDb: DatabaseSync;
  readonly truth: GroupStore;
  close(): Promise<void>;
}

let files = 0;
function setup(options: { watched: boolean; limits?: GroupMemoryLimits }): Setup {
  const file = join(dir, `db-${++files}.sqlite`);
  const b = openSqliteStores(file);
  const aDb = openSqliteDatabase(file);
  const watch: CommitWatch = options.watched ? watchCommits(aDb) : unwatched();
  assert.equal(watch.shared, options.watched);
  const aDriver = sqliteDriver(aDb);
  const truthDb = openSqliteDatabase(file);
  return {
    a: groupsWithMemory(aDb, watch, options.limits ?? GROUP_MEMORY_LIMITS),
    aUsers: sqlUserStore(aDriver),
    aDb,
    b,
    bDb: sqliteDb(b),
    truth: sqlGroupStore(sqliteDriver(truthDb)),
    async close() {
      aDb.close();
      truthDb.close();
      watch.close();
      await b.close();
    },
  };
}

/** Every answer A gives from memory is the database's; a miss, once filled, is answered from memory. */
async function assertExact(s: Setup, where: string, fillsStay: boolean): Promise<void> {
  for (const username of USERS) {
    const list = JSON.stringify(await s.truth.listForMember(username));
    const remembered = s.a.listFromMemory(username)?.toString();
    if (remembered !== undefined) assert.equal(remembered, list, `${where}: list of ${username} from memory`);
    else {
      assert.equal(JSON.stringify(await s.a.listForMember(username)), list, `${where}: list of ${username}`);
      if (fillsStay)
        assert.equal(s.a.listFromMemory(username)?.toString(), list, `${where}: list of ${username} kept`);
    }
    for (const id of [...IDS, 9]) {
      const truth = await s.truth.detail(id, username);
      const detail = truth === null ? undefined : JSON.stringify(truth);
      const peeked = s.a.detailFromMemory(id, username)?.toString();
      if (peeked !== undefined)
        assert.equal(peeked, detail, `${where}: detail ${id} for ${username} from memory`);
      else {
        const fresh = await s.a.detail(id, username);
        assert.equal(fresh === null ? undefined : JSON.stringify(fresh), detail, `${where}: detail ${id}`);
        if (fillsStay && detail !== undefined)
          assert.equal(s.a.detailFromMemory(id, username)?.toString(), detail);
      }
    }
  }
}

type Op =
  | { by: 'a' | 'b'; kind: 'upsert'; id: number; name: string; text: string; type: 0 | 1 }
  | { by: 'a' | 'b'; kind: 'remove'; id: number }
  | { by: 'a' | 'b'; kind: 'member'; id: number; user: string; status: 0 | 1 | 2 }
  | { by: 'a' | 'b'; kind: 'unmember'; id: number; user: string }
  | { by: 'a' | 'b'; kind: 'active'; user: string; active: boolean }
  | { by: 'a' | 'b'; kind: 'delete user'; user: string }
  | { by: 'a' | 'b'; kind: 'rename user'; user: string; to: string }
  | { by: 'a' | 'b'; kind: 'import'; id: number; name: string; user: string; status: 0 | 1 | 2 }
  | { by: 'a' | 'b'; kind: 'login'; user: string };

const by = fc.constantFrom('a' as const, 'b' as const);
const id = fc.constantFrom(...IDS);
const user = fc.constantFrom(...USERS);
const status = fc.constantFrom(0 as const, 1 as const, 2 as const);
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    by,
    kind: fc.constant('upsert' as const),
    id,
    name: fc.constantFrom(...NAMES),
    text: fc.string({ unit: 'grapheme', maxLength: 12 }),
    type: fc.constantFrom(0 as const, 1 as const),
  }),
  fc.record({ by, kind: fc.constant('remove' as const), id }),
  fc.record({ by, kind: fc.constant('member' as const), id, user, status }),
  fc.record({ by, kind: fc.constant('member' as const), id, user, status }),
  fc.record({ by, kind: fc.constant('unmember' as const), id, user }),
  fc.record({ by, kind: fc.constant('active' as const), user, active: fc.boolean() }),
  fc.record({ by, kind: fc.constant('delete user' as const), user }),
  fc.record({ by, kind: fc.constant('rename user' as const), user, to: user }),
  fc.record({ by, kind: fc.constant('import' as const), id, name: fc.constantFrom(...NAMES), user, status }),
  fc.record({ by, kind: fc.constant('login' as const), user }),
);

async function apply(s: Setup, o: Op): Promise<void> {
  const groups = o.by === 'a' ? s.a : s.b.groups;
  const users = o.by === 'a' ? s.aUsers : s.b.users;
  const db = o.by === 'a' ? s.aDb : s.bDb;
  try {
    switch (o.kind) {
      case 'upsert':
        return await groups.upsertGroup({
          id: o.id,
          name: o.name,
          description: o.text,
          short_description: `${o.text}!`,
          activities: '',
          type: o.type,
        });
      case 'remove':
        await groups.removeGroup(o.id);
        return;
      case 'member':
        return await groups.setMembership({ group: o.id, username: o.user, status: o.status });
      case 'unmember':
        await groups.removeMembership(o.id, o.user);
        return;
      case 'active':
        await users.setActive(o.user, o.active);
        return;
      case 'delete user':
        db.prepare('DELETE FROM users WHERE username = ?').run(o.user);
        return;
      case 'rename user':
        // A user without memberships only: memberships reference users without ON UPDATE CASCADE.
        db.prepare('UPDATE users SET username = ? WHERE username = ?').run(`${o.to}-renamed`, o.user);
        return;
      case 'import': {
        const group: Group = {
          id: o.id,
          name: o.name,
          description: 'imported',
          short_description: '',
          activities: '',
          type: 0,
        };
        await groups.importData({
          groups: [group],
          users: [],
          memberships: [{ group: o.id, username: o.user, status: o.status }],
        });
        return;
      }
      case 'login':
        await users.recordLogin(o.user, Date.now(), true);
        return;
    }
  } catch (err) {
    // Writes the data refuses (a taken name, a missing group, a renamed user's memberships) change nothing.
    if (err instanceof ImportConflictError) return;
    if (/constraint/i.test((err as Error).message)) return;
    throw err;
  }
}

const CONFIGURATIONS: readonly { name: string; watched: boolean; limits?: GroupMemoryLimits }[] = [
  { name: 'watching the WAL-index header', watched: true },
  { name: 'without a -shm to watch (the generation read on every call)', watched: false },
  {
    name: 'bounded to almost nothing (evictions, users with more memberships than are kept)',
    watched: true,
    limits: { groupBytes: 400, membershipBytes: 160, membershipsPerUser: 2 },
  },
];

for (const configuration of CONFIGURATIONS) {
  describe(`the group memory, ${configuration.name}`, () => {
    test('after any write by either connection, every answer from memory is the database’s', async () => {
      const s = setup(configuration);
      const fillsStay = configuration.limits === undefined;
      try {
        await fc.assert(
          fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 20 }), async (ops) => {
            s.bDb.exec('DELETE FROM memberships; DELETE FROM groups; DELETE FROM users');
            await assertExact(s, 'empty', fillsStay);
            // Groups to join from the start, so that most membership writes land.
            s.bDb.exec("INSERT INTO groups (id, name) VALUES (1, 'One'), (2, 'Two'), (3, 'Three')");
            for (const [i, o] of ops.entries()) {
              await apply(s, o);
              await assertExact(s, `after op ${i} ${JSON.stringify(o)}`, fillsStay);
            }
          }),
          { numRuns: 60 },
        );
      } finally {
        await s.close();
      }
    });
  });
}

describe('the group memory keeps its answers', () => {
  const seed = async (s: Setup) => {
    await s.b.groups.importData({
      groups: IDS.map((n) => ({
        id: n,
        name: NAMES[n]!,
        description: `about ${n}`,
        short_description: '',
        activities: '',
        type: 0 as const,
      })),
      users: [],
      memberships: [
        { group: 1, username: 'ann', status: 1 },
        { group: 2, username: 'ann', status: 0 },
        { group: 3, username: 'ann', status: 2 },
      ],
    });
    await s.a.listForMember('ann');
    assert.ok(s.a.listFromMemory('ann')?.toString() !== undefined);
  };

  test('through commits that change no answer: logins, sessions, throttle counters', async () => {
    const s = setup({ watched: true });
    try {
      await seed(s);
      const list = s.a.listFromMemory('ann')?.toString();
      const detail = s.a.detailFromMemory(2, 'ann')?.toString();
      assert.equal(detail, JSON.stringify(await s.truth.detail(2, 'ann')), 'a pending membership');
      await s.b.users.recordLogin('ann', Date.now(), true);
      await s.b.users.recordLogin('dan', Date.now(), true);
      const now = Date.now();
      await s.b.sessions.create(
        {
          idHash: Buffer.alloc(32, 1),
          username: 'ann',
          createdAt: now,
          expiresAt: now + 60_000,
          clientIp: null,
          userAgent: null,
        },
        100,
      );
      await s.b.throttle.recordFailure(['user:ann'], 'f', now, 60_000);
      assert.equal(s.a.listFromMemory('ann')?.toString(), list);
      assert.equal(s.a.detailFromMemory(2, 'ann')?.toString(), detail);
    } finally {
      await s.close();
    }
  });

  test('through a change to a group the user is not in, but not one to a group in the list', async () => {
    const s = setup({ watched: true });
    try {
      await seed(s);
      const list = s.a.listFromMemory('ann')?.toString();
      const renamed = { id: 4, name: 'Renamed', description: '', short_description: '', activities: '' };
      await s.b.groups.upsertGroup({ ...renamed, type: 1 });
      assert.equal(s.a.listFromMemory('ann')?.toString(), list, 'group 4 is in no answer kept for ann');
      await s.b.groups.upsertGroup({ ...renamed, id: 3, name: 'Art', description: 'about 3!', type: 0 });
      assert.equal(s.a.listFromMemory('ann')?.toString(), undefined, 'group 3 is in her list');
      const fresh = JSON.stringify(await s.a.listForMember('ann'));
      assert.notEqual(fresh, list);
      assert.equal(s.a.listFromMemory('ann')?.toString(), fresh);
    } finally {
      await s.close();
    }
  });

  test('bounded: the oldest entries leave first, and what is left is still right', async () => {
    const s = setup({ watched: true, limits: { ...GROUP_MEMORY_LIMITS, membershipBytes: 3 * 80 } });
    try {
      await seed(s);
      for (const name of ['ben', 'cat', 'dan']) await s.a.listForMember(name);
      assert.equal(s.a.listFromMemory('ann')?.toString(), undefined, 'ann was the oldest');
      assert.equal(s.a.listFromMemory('dan')?.toString(), '[]');
    } finally {
      await s.close();
    }
  });
});
