// Contract §4: the import file (validateImport/applyImport, the path of `clubhouse import`) and the
// data limits, which the database enforces as well as the code.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { applyImport, validateImport } from '../../src/groups/import.ts';
import { ImportConflictError } from '../../src/store/errors.ts';
import type { Group } from '../../src/store/group-types.ts';
import { openSqliteStores } from '../../src/store/sqlite/store.ts';
import type { Stores } from '../../src/store/types.ts';
import { sqliteDb } from '../helpers/engines.ts';

type SqliteStores = Stores;

const MAX_ID = 2_147_483_647;
const REASONS = {
  id: 'must be an integer from 1 to 2147483647',
  type: 'must be 0 (normal) or 1 (classroom)',
  status: 'must be 0 (pending), 1 (member) or 2 (administrator)',
  active: 'must be true or false',
  unknown: 'unknown field',
  groupId: 'must be a group id',
  blank: 'may not be blank',
  string: 'must be a string',
  username: 'may not contain white space or control characters',
  nul: 'may not contain U+0000',
  surrogate: 'must be well-formed Unicode (no lone surrogates)',
  longer: (n: number) => `must have at most ${n} characters`,
};

const VALID = {
  groups: [
    {
      id: 1,
      name: 'Chess Club',
      description: 'Casual games.',
      short_description: 'Know the moves.',
      activities: 'Tuesdays.',
      type: 0,
    },
    { id: 2, name: 'Biology 2B', description: 'Cells.', short_description: '', activities: 'Labs.', type: 1 },
  ],
  users: [
    { username: 'dave', active: false },
    { username: 'erin', active: true },
  ],
  memberships: [
    { group: 1, username: 'alice', status: 1 },
    { group: 2, username: 'alice', status: 2 },
    { group: 1, username: 'dave', status: 0 },
  ],
};

/** A group with every field, for limit tests. */
const group = (fields: Record<string, unknown> = {}) => ({
  id: 10,
  name: 'Ten',
  description: '',
  short_description: '',
  activities: '',
  type: 0,
  ...fields,
});

describe('import files (contract §4)', () => {
  let dir: string;
  let opened = 0;
  const all: SqliteStores[] = [];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'clubhouse-import-'));
  });
  after(async () => {
    for (const stores of all) await stores.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A fresh database file for one test. */
  function fresh(): SqliteStores {
    const stores = openSqliteStores(join(dir, `db-${++opened}.sqlite`));
    all.push(stores);
    return stores;
  }

  test('a valid file applied twice gives the same state, the one the file describes', async () => {
    const stores = fresh();
    const first = await applyImport(stores, VALID, 'lower');
    assert.deepEqual(first, { ok: true, counts: { groups: 2, users: 2, memberships: 3 } });
    const once = await stores.groups.exportData();
    const second = await applyImport(stores, VALID, 'lower');
    assert.deepEqual(second, first);
    assert.deepEqual(await stores.groups.exportData(), once);
    assert.deepEqual(once, {
      groups: VALID.groups,
      users: [
        { username: 'alice', active: true },
        { username: 'dave', active: false },
        { username: 'erin', active: true },
      ],
      memberships: [
        { group: 1, username: 'alice', status: 1 },
        { group: 1, username: 'dave', status: 0 },
        { group: 2, username: 'alice', status: 2 },
      ],
    });
  });

  test('upserts: by id for groups, by username for users, by pair for memberships', async () => {
    const stores = fresh();
    await applyImport(stores, VALID, 'lower');
    const outcome = await applyImport(
      stores,
      {
        groups: [{ id: 2, name: 'Biology 3A', type: 0 }],
        users: [{ username: 'dave', active: true }],
        memberships: [{ group: 1, username: 'alice', status: 2 }],
      },
      'lower',
    );
    assert.equal(outcome.ok, true);
    const state = await stores.groups.exportData();
    assert.deepEqual(state.groups[1], {
      id: 2,
      name: 'Biology 3A',
      description: '',
      short_description: '',
      activities: '',
      type: 0,
    });
    assert.deepEqual(
      state.users.find((u) => u.username === 'dave'),
      { username: 'dave', active: true },
    );
    assert.deepEqual(state.memberships[0], { group: 1, username: 'alice', status: 2 });
    assert.equal(state.memberships.length, 3);
  });

  test('a file that swaps two names is applied (names are unique after the file, not in between)', async () => {
    const stores = fresh();
    await applyImport(stores, VALID, 'lower');
    const swapped = {
      groups: [
        { ...VALID.groups[0], name: 'Biology 2B' },
        { ...VALID.groups[1], name: 'Chess Club' },
      ],
    };
    assert.deepEqual(await applyImport(stores, swapped, 'lower'), {
      ok: true,
      counts: { groups: 2, users: 0, memberships: 0 },
    });
    assert.deepEqual((await stores.groups.exportData()).groups, swapped.groups);
  });

  test('three bad entries are all reported by JSON path and reason, and nothing changes', async () => {
    const stores = fresh();
    await applyImport(stores, VALID, 'lower');
    const before = await stores.groups.exportData();
    const file = {
      groups: [
        { id: 3, name: 'Fine' },
        { id: 4, name: 'Bad type', type: 2 },
      ],
      users: [{ username: 'zoe', active: 'yes' }],
      memberships: [
        { group: 1, username: 'zoe', status: 1 },
        { group: 3, username: 'zoe', status: 1 },
        { group: 3, username: 'yves', status: 5 },
      ],
    };
    const expected = {
      ok: false,
      problems: [
        { path: 'groups[1].type', reason: REASONS.type },
        { path: 'users[0].active', reason: REASONS.active },
        { path: 'memberships[2].status', reason: REASONS.status },
      ],
    };
    assert.deepEqual(validateImport(file, 'lower'), expected);
    assert.deepEqual(await applyImport(stores, file, 'lower'), expected);
    assert.deepEqual(await stores.groups.exportData(), before);
  });

  test('conflicts only the database sees are reported by path and roll the whole file back', async () => {
    const stores = fresh();
    await applyImport(stores, VALID, 'lower');
    const before = await stores.groups.exportData();
    const file = {
      groups: [
        { id: 5, name: 'New and fine' },
        { id: 6, name: 'Chess Club' },
      ],
      users: [{ username: 'newcomer', active: true }],
      memberships: [
        { group: 5, username: 'alice', status: 1 },
        { group: 99, username: 'alice', status: 1 },
        { group: 2, username: 'dave', status: 1 },
      ],
    };
    assert.equal(validateImport(file, 'lower').ok, true, 'the file itself is well-formed');
    assert.deepEqual(await applyImport(stores, file, 'lower'), {
      ok: false,
      problems: [
        { path: 'groups[1].name', reason: '"Chess Club" is already the name of another group' },
        { path: 'memberships[1].group', reason: 'no group with id 99' },
      ],
    });
    assert.deepEqual(
      await stores.groups.exportData(),
      before,
      'group 5, newcomer and the memberships are gone',
    );
    assert.equal(await stores.users.get('newcomer'), null);
  });

  test('a membership of an unknown username creates that user, active', async () => {
    const stores = fresh();
    await applyImport(stores, VALID, 'lower');
    assert.equal(await stores.users.get('zed'), null);
    const outcome = await applyImport(
      stores,
      { memberships: [{ group: 2, username: 'zed', status: 0 }] },
      'lower',
    );
    assert.deepEqual(outcome, { ok: true, counts: { groups: 0, users: 0, memberships: 1 } });
    const zed = await stores.users.get('zed');
    assert.equal(zed?.active, true);
    assert.equal(zed?.lastLoginAt, null);
    assert.deepEqual(await stores.groups.detail(2, 'zed'), { ...VALID.groups[1], member_status: 0 });
  });

  test('usernames are trimmed and lower-cased; the canonical form decides duplicates', async () => {
    const stores = fresh();
    await applyImport(stores, VALID, 'lower');
    const outcome = await applyImport(
      stores,
      {
        users: [{ username: '  Frank\t', active: false }],
        memberships: [
          { group: 1, username: '\nGRETA ', status: 1 },
          { group: 2, username: 'ÄNNE', status: 2 },
        ],
      },
      'lower',
    );
    assert.equal(outcome.ok, true);
    const state = await stores.groups.exportData();
    assert.deepEqual(
      state.users.map((u) => u.username),
      ['alice', 'dave', 'erin', 'frank', 'greta', 'änne'],
    );
    assert.deepEqual(
      state.memberships.filter((m) => ['greta', 'änne'].includes(m.username)),
      [
        { group: 1, username: 'greta', status: 1 },
        { group: 2, username: 'änne', status: 2 },
      ],
    );
    assert.deepEqual(
      validateImport(
        {
          users: [{ username: 'Bob' }, { username: ' bob' }],
          memberships: [
            { group: 1, username: 'BOB', status: 1 },
            { group: 1, username: 'bob', status: 2 },
          ],
        },
        'lower',
      ),
      {
        ok: false,
        problems: [
          { path: 'users[1].username', reason: 'duplicate of users[0].username' },
          { path: 'memberships[1]', reason: 'duplicate of memberships[0]' },
        ],
      },
    );
    const preserved = validateImport({ users: [{ username: ' Bob ' }] }, 'preserve');
    assert.deepEqual(preserved, {
      ok: true,
      // contract §4: no `active` in the file means "leave the flag as it is" (null), not true.
      data: { groups: [], users: [{ username: 'Bob', active: null }], memberships: [] },
    });
  });

  test('usernames that login would refuse are refused here too', async () => {
    const file = {
      memberships: [
        { group: 1, username: 'two words', status: 1 },
        { group: 1, username: 'tab\there', status: 1 },
        { group: 1, username: '   ', status: 1 },
        { group: 1, username: 7, status: 1 },
        { group: 1, username: 'x'.repeat(151), status: 1 },
        { group: 1, username: 'x'.repeat(150), status: 1 },
        { group: 1, username: 'lone\ud800', status: 1 },
      ],
    };
    assert.deepEqual(validateImport(file, 'lower'), {
      ok: false,
      problems: [
        { path: 'memberships[0].username', reason: REASONS.username },
        { path: 'memberships[1].username', reason: REASONS.username },
        { path: 'memberships[2].username', reason: REASONS.blank },
        { path: 'memberships[3].username', reason: REASONS.string },
        { path: 'memberships[4].username', reason: REASONS.longer(150) },
        { path: 'memberships[6].username', reason: REASONS.surrogate },
      ],
    });
  });

  // contract §3, one person one identity: the import canonicalises as login does.
  test('usernames are canonicalised by the PRECIS profile, or refused with the reason', async () => {
    const file = {
      users: [{ username: 'ＬＥＮＡ' }, { username: 'JU\u0308RGEN' }, { username: 'ΣΑΣ' }],
      memberships: [
        { group: 1, username: '𝐥𝐞𝐧𝐚', status: 1 },
        { group: 1, username: 'ⓛⓔⓝⓐ', status: 1 },
        { group: 1, username: 'lena♥', status: 1 },
        { group: 1, username: 'le\u200bna', status: 1 },
        { group: 1, username: "d'arcy+o,k", status: 1 },
      ],
    };
    const profile = (reason: string) =>
      `must be allowed by the UsernameCaseMapped profile (RFC 8265): ${reason}`;
    assert.deepEqual(validateImport(file, 'lower'), {
      ok: false,
      problems: [
        {
          path: 'memberships[0].username',
          reason: profile('U+1D425 is not allowed: compatibility character (RFC 8264 §9.17)'),
        },
        {
          path: 'memberships[1].username',
          reason: profile('U+24DB is not allowed: compatibility character (RFC 8264 §9.17)'),
        },
        {
          path: 'memberships[2].username',
          reason: profile('U+2665 is not allowed: symbol outside ASCII (RFC 8264 §9.15)'),
        },
        {
          path: 'memberships[3].username',
          reason: profile('U+200B is not allowed: default-ignorable or noncharacter (RFC 8264 §9.13)'),
        },
      ],
    });
    const valid = {
      ...file,
      memberships: [file.memberships[4]!, { group: 1, username: 'ｌｅｎａ', status: 2 }],
    };
    const checked = validateImport(valid, 'lower');
    assert.ok(checked.ok);
    assert.deepEqual(
      checked.data.users.map((u) => u.username),
      ['lena', 'jürgen', 'σασ'],
    );
    assert.deepEqual(
      checked.data.memberships.map((m) => m.username),
      ["d'arcy+o,k", 'lena'],
    );
    const preserved = validateImport(valid, 'preserve');
    assert.ok(preserved.ok);
    assert.deepEqual(
      preserved.data.users.map((u) => u.username),
      ['LENA', 'JÜRGEN', 'ΣΑΣ'],
    );
  });

  test('unicode and empty strings survive import → export exactly', async () => {
    const stores = fresh();
    const strings = {
      groups: [
        {
          id: 1,
          name: 'Ünïcødé 🎲 👩‍👩‍👧 e\u0301 مرحبا 漢字',
          description: 'line 1\nline 2\t"quoted" \\ \u2028 \u0001 \u007f \u200b \uFEFF end',
          short_description: '',
          activities: '𝄞'.repeat(50),
          type: 1,
        },
        { id: 2, name: ' padded name ', description: '', short_description: '  ', activities: '', type: 0 },
      ],
      users: [{ username: 'ünïcode', active: true }],
      memberships: [{ group: 1, username: 'ünïcode', status: 2 }],
    };
    assert.equal((await applyImport(fresh(), strings, 'lower')).ok, true);
    assert.equal((await applyImport(stores, strings, 'lower')).ok, true);
    assert.deepEqual(await stores.groups.exportData(), strings);
    assert.deepEqual(await stores.groups.detail(1, 'ünïcode'), { ...strings.groups[0], member_status: 2 });
  });

  test('strings SQLite cannot give back exactly (U+0000, lone surrogates) are refused, not mangled', async () => {
    const stores = fresh();
    const file = {
      groups: [
        group({ id: 1, name: 'x\u0000y' }),
        group({ id: 2, name: 'Two', description: 'before\u0000after' }),
        group({ id: 3, name: 'Three', activities: 'half \ud83c pair' }),
        group({ id: 4, name: 'Four', short_description: '\udfb2' }),
      ],
    };
    assert.deepEqual(await applyImport(stores, file, 'lower'), {
      ok: false,
      problems: [
        { path: 'groups[0].name', reason: REASONS.nul },
        { path: 'groups[1].description', reason: REASONS.nul },
        { path: 'groups[2].activities', reason: REASONS.surrogate },
        { path: 'groups[3].short_description', reason: REASONS.surrogate },
      ],
    });
    assert.deepEqual((await stores.groups.exportData()).groups, []);
  });

  test('text limits are counted in code points: at the limit is accepted, one above is refused', async () => {
    const limits = { name: 200, description: 10_000, short_description: 500, activities: 10_000 } as const;
    for (const [field, limit] of Object.entries(limits)) {
      for (const unit of ['a', '😀']) {
        const atLimit = group({ [field]: unit.repeat(limit) });
        const stores = fresh();
        const accepted = await applyImport(stores, { groups: [atLimit] }, 'lower');
        assert.deepEqual(
          accepted,
          { ok: true, counts: { groups: 1, users: 0, memberships: 0 } },
          `${field} ${unit}`,
        );
        assert.deepEqual(
          (await stores.groups.exportData()).groups,
          [atLimit],
          'the database agrees with the count',
        );
        const above = validateImport({ groups: [group({ [field]: unit.repeat(limit + 1) })] }, 'lower');
        assert.deepEqual(above, {
          ok: false,
          problems: [{ path: `groups[0].${field}`, reason: REASONS.longer(limit) }],
        });
      }
    }
    // Two code points that are one grapheme count as two.
    const combining = validateImport({ groups: [group({ name: `${'e\u0301'.repeat(100)}x` })] }, 'lower');
    assert.deepEqual(combining, {
      ok: false,
      problems: [{ path: 'groups[0].name', reason: REASONS.longer(200) }],
    });
  });

  test('a name must be a non-empty string; the other text fields may be empty or absent', () => {
    const outcome = validateImport(
      {
        groups: [
          { id: 1, name: '' },
          { id: 2, name: ' \t' },
          { id: 3 },
          { id: 4, name: 5 },
          { id: 5, name: 'Five', description: null },
          { id: 6, name: 'Six', activities: 6 },
          { id: 7, name: 'Seven' },
        ],
      },
      'lower',
    );
    assert.deepEqual(outcome, {
      ok: false,
      problems: [
        { path: 'groups[0].name', reason: REASONS.blank },
        { path: 'groups[1].name', reason: REASONS.blank },
        { path: 'groups[2].name', reason: 'is required and must be a string' },
        { path: 'groups[3].name', reason: 'is required and must be a string' },
        { path: 'groups[4].description', reason: REASONS.string },
        { path: 'groups[5].activities', reason: REASONS.string },
      ],
    });
    assert.deepEqual(validateImport({ groups: [{ id: 7, name: 'Seven' }] }, 'lower'), {
      ok: true,
      data: { groups: [group({ id: 7, name: 'Seven' })], users: [], memberships: [] },
    });
  });

  test('id is an integer from 1 to 2^31−1; type is 0 or 1; status is 0, 1 or 2', async () => {
    const good = {
      groups: [group({ id: 1, name: 'One', type: 0 }), group({ id: MAX_ID, name: 'Max', type: 1 })],
      memberships: [
        { group: 1, username: 'a', status: 0 },
        { group: 1, username: 'b', status: 1 },
        { group: MAX_ID, username: 'c', status: 2 },
      ],
    };
    const stores = fresh();
    assert.deepEqual(await applyImport(stores, good, 'lower'), {
      ok: true,
      counts: { groups: 2, users: 0, memberships: 3 },
    });
    assert.deepEqual((await stores.groups.exportData()).groups, good.groups);

    const badIds = [0, MAX_ID + 1, -1, 1.5, '5', null, 2 ** 53];
    const badTypes = [2, -1, '1', null, true, 0.5];
    const badStatuses = [3, -1, '1', null, 1.5];
    const file = {
      groups: [
        ...badIds.map((id, index) => ({ id, name: `bad id ${index}` })),
        ...badTypes.map((type, index) => ({ id: 100 + index, name: `bad type ${index}`, type })),
      ],
      memberships: [
        ...badStatuses.map((status) => ({ group: 1, username: 'a', status })),
        { group: 0, username: 'a', status: 1 },
        { group: MAX_ID + 1, username: 'a', status: 1 },
      ],
    };
    assert.deepEqual(validateImport(file, 'lower'), {
      ok: false,
      problems: [
        ...badIds.map((_, index) => ({ path: `groups[${index}].id`, reason: REASONS.id })),
        ...badTypes.map((_, index) => ({
          path: `groups[${badIds.length + index}].type`,
          reason: REASONS.type,
        })),
        ...badStatuses.map((_, index) => ({ path: `memberships[${index}].status`, reason: REASONS.status })),
        { path: `memberships[${badStatuses.length}].group`, reason: REASONS.groupId },
        { path: `memberships[${badStatuses.length + 1}].group`, reason: REASONS.groupId },
      ],
    });
  });

  test('unknown fields are reported at every level', () => {
    const outcome = validateImport(
      {
        groups: [{ id: 1, name: 'One', colour: 'red' }],
        users: [{ username: 'dave', email: 'dave@example.org' }],
        memberships: [{ group: 1, username: 'dave', status: 1, role: 'x' }],
        extra: true,
      },
      'lower',
    );
    assert.deepEqual(outcome, {
      ok: false,
      problems: [
        { path: '$.extra', reason: REASONS.unknown },
        { path: 'groups[0].colour', reason: REASONS.unknown },
        { path: 'users[0].email', reason: REASONS.unknown },
        { path: 'memberships[0].role', reason: REASONS.unknown },
      ],
    });
  });

  test('the shape of the file itself is checked', () => {
    for (const json of [null, [], 'groups', 5]) {
      assert.deepEqual(validateImport(json, 'lower'), {
        ok: false,
        problems: [{ path: '$', reason: 'must be an object with groups, users and memberships' }],
      });
    }
    assert.deepEqual(validateImport({ groups: {}, users: null, memberships: [5] }, 'lower'), {
      ok: false,
      problems: [
        { path: 'groups', reason: 'must be a list' },
        { path: 'users', reason: 'must be a list' },
        { path: 'memberships[0]', reason: 'must be an object' },
      ],
    });
    assert.deepEqual(validateImport({}, 'lower'), {
      ok: true,
      data: { groups: [], users: [], memberships: [] },
    });
    assert.deepEqual(
      validateImport(
        {
          groups: [
            { id: 1, name: 'A' },
            { id: 1, name: 'B' },
            { id: 2, name: 'A' },
          ],
        },
        'lower',
      ),
      {
        ok: false,
        problems: [
          { path: 'groups[1].id', reason: 'duplicate of groups[0].id' },
          { path: 'groups[2].name', reason: 'duplicate of groups[0].name' },
        ],
      },
    );
  });

  describe('the database enforces the limits too', () => {
    let stores: SqliteStores;
    let db: DatabaseSync;
    before(async () => {
      stores = fresh();
      db = sqliteDb(stores);
      await applyImport(stores, VALID, 'lower');
    });

    const insertGroup = (values: Record<string, unknown>) => {
      const row = { ...group({ id: 50, name: 'Fifty' }), ...values };
      db.prepare(
        'INSERT INTO groups (id, name, description, short_description, activities, type) VALUES (?, ?, ?, ?, ?, ?)',
      ).run(
        ...([
          row.id,
          row.name,
          row.description,
          row.short_description,
          row.activities,
          row.type,
        ] as SQLInputValue[]),
      );
    };

    /** Runs `work` and undoes it, so each case starts from the same rows. */
    const attempt = (work: () => void) => {
      db.exec('SAVEPOINT attempt');
      try {
        work();
      } finally {
        db.exec('ROLLBACK TO attempt; RELEASE attempt');
      }
    };

    test('rows inside the limits are accepted by a direct INSERT', () => {
      const cases: Record<string, unknown>[] = [
        { id: 1_000 },
        { id: MAX_ID },
        { name: 'n'.repeat(200) },
        { name: '😀'.repeat(200) },
        { description: 'd'.repeat(10_000) },
        { short_description: 's'.repeat(500) },
        { activities: 'a'.repeat(10_000) },
        { type: 1 },
      ];
      for (const values of cases) attempt(() => insertGroup(values));
      attempt(() =>
        db.prepare('INSERT INTO users (username, active, created_at) VALUES (?, 0, 0)').run('u'.repeat(150)),
      );
      attempt(() =>
        db.prepare("INSERT INTO memberships (username, group_id, status) VALUES ('erin', 2, 2)").run(),
      );
    });

    test('a direct INSERT outside the limits fails a CHECK', () => {
      const cases: [string, Record<string, unknown>][] = [
        ['id 0', { id: 0 }],
        ['id 2^31', { id: MAX_ID + 1 }],
        ['empty name', { name: '' }],
        ['name 201', { name: 'n'.repeat(201) }],
        ['name 201 astral', { name: '😀'.repeat(201) }],
        ['description 10001', { description: 'd'.repeat(10_001) }],
        ['short_description 501', { short_description: 's'.repeat(501) }],
        ['activities 10001', { activities: 'a'.repeat(10_001) }],
        ['type 2', { type: 2 }],
        ['type -1', { type: -1 }],
      ];
      for (const [what, values] of cases) {
        assert.throws(() => attempt(() => insertGroup(values)), /CHECK constraint failed/, what);
      }
      const users = db.prepare('INSERT INTO users (username, active, created_at) VALUES (?, ?, 0)');
      assert.throws(() => attempt(() => users.run('', 1)), /CHECK constraint failed/);
      assert.throws(() => attempt(() => users.run('u'.repeat(151), 1)), /CHECK constraint failed/);
      assert.throws(() => attempt(() => users.run('zoe', 2)), /CHECK constraint failed/);
      const memberships = db.prepare('INSERT INTO memberships (username, group_id, status) VALUES (?, ?, ?)');
      assert.throws(() => attempt(() => memberships.run('erin', 2, 3)), /CHECK constraint failed/);
      assert.throws(() => attempt(() => memberships.run('erin', 2, -1)), /CHECK constraint failed/);
    });

    test('types, uniqueness and references are enforced by the database', () => {
      assert.throws(
        () => attempt(() => insertGroup({ name: 'Chess Club' })),
        /UNIQUE constraint failed: groups.name/,
      );
      assert.throws(
        () => attempt(() => insertGroup({ type: 'one' })),
        /cannot store TEXT value in INTEGER column/,
      );
      assert.throws(
        () => attempt(() => insertGroup({ name: new Uint8Array([65]) })),
        /cannot store BLOB value in TEXT column/,
      );
      assert.throws(() => attempt(() => insertGroup({ id: 1.5 })), /datatype mismatch/);
      const memberships = db.prepare('INSERT INTO memberships (username, group_id, status) VALUES (?, ?, ?)');
      assert.throws(() => attempt(() => memberships.run('erin', 99, 1)), /FOREIGN KEY constraint failed/);
      assert.throws(() => attempt(() => memberships.run('nobody', 1, 1)), /FOREIGN KEY constraint failed/);
      assert.throws(() => attempt(() => memberships.run('alice', 1, 2)), /UNIQUE constraint failed/);
      assert.throws(
        () => attempt(() => db.prepare("UPDATE memberships SET status = 7 WHERE username = 'alice'").run()),
        /CHECK constraint failed/,
      );
    });

    test('a CHECK failure in the store is an error, not reported as a name conflict', async () => {
      const before = await stores.groups.exportData();
      // Bypasses validation on purpose: the store gets a row the database must refuse.
      const bad = group({ id: 60, name: 'Sixty', type: 2 }) as unknown as Group;
      await assert.rejects(
        stores.groups.importData({ groups: [bad], users: [], memberships: [] }),
        (err: Error) => !(err instanceof ImportConflictError) && /CHECK constraint failed/.test(err.message),
      );
      await assert.rejects(
        stores.groups.upsertGroup(bad),
        (err: Error) => !(err instanceof ImportConflictError) && /CHECK constraint failed/.test(err.message),
      );
      await assert.rejects(
        stores.groups.upsertGroup(group({ id: 61, name: 'Chess Club' }) as Group),
        (err: Error) => err instanceof ImportConflictError,
      );
      assert.deepEqual(await stores.groups.exportData(), before);
    });
  });
});
