// The group search of contract §13 below the HTTP layer, on SQLite and on PostgreSQL at once: the
// trigram index (sql/group-search.ts, migration 12) proposes candidates and the folded substring test
// decides, so both engines give exactly the answer of a plain JavaScript filter over the same folded
// texts (the oracle here), for queries of any length, any case or accents, on either plan (few
// candidates, or so many that the scan is taken), and after a group's texts were changed by SQL
// behind the service's back (an operator's shell), which the next search must see.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { applyImport } from '../../src/groups/import.ts';
import type { GroupSearchPage, GroupType } from '../../src/store/group-types.ts';
import { foldForSearch, groupSearchText } from '../../src/store/search-text.ts';
import type { Stores } from '../../src/store/types.ts';
import { pgPool, sqliteDb } from '../helpers/engines.ts';
import { type StoreData, storeOf } from '../helpers/stores.ts';

interface Texts {
  id: number;
  name: string;
  short_description: string;
  description: string;
  type: GroupType;
}

const PAGE = 50;

/** What every engine must answer: the matches in code-point order of the folded text, then id. */
function oracle(groups: Iterable<Texts>, q: string, type: GroupType | null, page: number): GroupSearchPage {
  const text = foldForSearch(q);
  const matches = [...groups]
    .map((group) => ({ group, folded: Buffer.from(groupSearchText(group)) }))
    .filter(
      ({ group, folded }) => folded.includes(Buffer.from(text)) && (type === null || group.type === type),
    )
    .sort((a, b) => Buffer.compare(a.folded, b.folded) || a.group.id - b.group.id);
  const results = matches.slice((page - 1) * PAGE, page * PAGE).map(({ group }) => ({
    id: group.id,
    name: group.name,
    short_description: group.short_description,
    type: group.type,
    member_status: -1 as const,
  }));
  if (results.length === 0) return { count: page === 1 ? 0 : null, results };
  return { count: matches.length, results };
}

/** A statement on the database behind the service, as an operator's SQL shell would run it. */
async function sql(stores: Stores, text: string, params: (string | number)[] = []): Promise<void> {
  if (stores.engine.database === 'sqlite') {
    sqliteDb(stores)
      .prepare(text.replace(/\$(\d+)/g, '?$1'))
      .run(...params);
  } else await pgPool(stores).query(text, params);
}

const search = (stores: Stores, q: string, type: GroupType | null = null, page = 1) =>
  stores.groups.search({
    username: 'nobody',
    text: foldForSearch(q),
    type,
    offset: (page - 1) * PAGE,
    limit: PAGE,
  });

const asImport = (groups: Iterable<Texts>) => ({
  groups: [...groups].map((group) => ({ ...group, activities: '' })),
});

describe('the group search on SQLite and PostgreSQL (contract §13)', () => {
  const engines: { name: string; data: StoreData; stores: Stores }[] = [];
  before(async () => {
    for (const kind of ['sqlite', 'postgres'] as const) {
      const data = await storeOf(kind).create();
      engines.push({ name: kind, data, stores: await data.open() });
    }
  });
  after(async () => {
    for (const { data, stores } of engines) {
      await stores.close();
      await data.drop();
    }
  });
  const reset = async () => {
    for (const { data, stores } of engines) await data.reset(stores);
  };
  /** Asks every engine; each must give the oracle's answer. */
  async function expectEverywhere(
    groups: Map<number, Texts>,
    q: string,
    type: GroupType | null = null,
    page = 1,
  ) {
    const expected = oracle(groups.values(), q, type, page);
    for (const { name, stores } of engines) {
      assert.deepEqual(
        await search(stores, q, type, page),
        expected,
        `${name}: q=${JSON.stringify(q)} type=${type} page=${page}`,
      );
    }
    return expected;
  }
  async function load(groups: Map<number, Texts>) {
    for (const { stores } of engines) {
      const imported = await applyImport(stores, asImport(groups.values()), 'lower');
      assert.equal(imported.ok, true, JSON.stringify(imported));
    }
  }

  test('queries of one and two characters, case and accents, and the words across fields', async () => {
    await reset();
    const groups = new Map<number, Texts>(
      [
        { id: 1, name: 'Échecs', short_description: 'Jeu', description: 'ÉCOLE de ﬁnesse', type: 0 },
        { id: 2, name: 'Straße', short_description: 'İstanbul', description: 'x²', type: 1 },
        { id: 3, name: 'Ab', short_description: '', description: '', type: 0 },
        { id: 4, name: 'ÅB cd', short_description: '😀 smile', description: 'Σίσυφος', type: 1 },
        {
          id: 5,
          name: '"quoted" 100% _x_',
          short_description: 'back\\slash',
          description: 'AND OR NEAR',
          type: 0,
        },
      ].map((group) => [group.id, group as Texts]),
    );
    await load(groups);
    const asked: [string, number[]][] = [
      ['e', [1, 2, 4, 5]],
      ['É', [1, 2, 4, 5]],
      ['ab', [3, 4]],
      ['b c', [4]],
      ['AB C', [4]],
      ['ss', [1, 2]],
      ['STRASSE', [2]],
      ['istanbul', [2]],
      ['fin', [1]],
      ['x2', [2]],
      ['😀', [4]],
      ['😀 s', [4]],
      ['σισυφος', [4]],
      ['ΣΊΣΥΦΟΣ', [4]],
      ['"quoted"', [5]],
      ['"', [5]],
      ['100%', [5]],
      ['%', [5]],
      ['_x_', [5]],
      ['\\', [5]],
      ['and or', [5]],
      ['near', [5]],
      // The fields are apart: a query never spans two of them.
      ['jeu ecole', []],
      ['echecsjeu', []],
      ['', [3, 4, 1, 5, 2]],
    ];
    for (const [q, ids] of asked) {
      const expected = await expectEverywhere(groups, q);
      assert.deepEqual(
        expected.results.map((g) => g.id).sort(),
        [...ids].sort(),
        `oracle for ${JSON.stringify(q)}`,
      );
    }
    await expectEverywhere(groups, 'e', 1);
    await expectEverywhere(groups, 'ab', 0);
  });

  test('a change made by SQL behind the service is what the next search answers', async () => {
    await reset();
    const groups = new Map<number, Texts>(
      Array.from({ length: 30 }, (_, i) => {
        const group: Texts = {
          id: i + 1,
          name: `Club ${i + 1}`,
          short_description: `Meets on day ${i % 7}`,
          description: '',
          type: 0,
        };
        return [group.id, group];
      }),
    );
    await load(groups);
    await expectEverywhere(groups, 'club 1');
    await expectEverywhere(groups, 'day 3');
    // The name, a description, a new group, a deleted one, an id moved: as an operator would.
    const renamed = { ...groups.get(12)!, name: 'Café Noir' };
    groups.set(12, renamed);
    const described = { ...groups.get(3)!, description: 'Rare ÉTOILES' };
    groups.set(3, described);
    const added: Texts = { id: 40, name: 'Étoile Club', short_description: '', description: '', type: 1 };
    groups.set(40, added);
    groups.delete(5);
    const moved = { ...groups.get(6)!, id: 41 };
    groups.delete(6);
    groups.set(41, moved);
    for (const { stores } of engines) {
      await sql(stores, 'UPDATE groups SET name = $1 WHERE id = 12', [renamed.name]);
      await sql(stores, 'UPDATE groups SET description = $1 WHERE id = 3', [described.description]);
      await sql(
        stores,
        "INSERT INTO groups (id, name, description, short_description, activities, type) VALUES (40, $1, '', '', '', 1)",
        [added.name],
      );
      await sql(stores, 'DELETE FROM groups WHERE id = 5');
      await sql(stores, 'UPDATE groups SET id = 41 WHERE id = 6');
    }
    assert.deepEqual(
      (await expectEverywhere(groups, 'cafe noir')).results.map((g) => g.id),
      [12],
    );
    assert.deepEqual((await expectEverywhere(groups, 'club 12')).results, []);
    assert.deepEqual(
      (await expectEverywhere(groups, 'etoile')).results.map((g) => g.id),
      [3, 40],
    );
    assert.deepEqual((await expectEverywhere(groups, 'club 5')).results, []);
    assert.deepEqual(
      (await expectEverywhere(groups, 'club 6')).results.map((g) => g.id),
      [41],
    );
    await expectEverywhere(groups, 'club 1');
    await expectEverywhere(groups, 'day');
    await expectEverywhere(groups, 'c');
    // And again, after the search text was refolded: a second change of the same group.
    const again = { ...renamed, name: 'Thé Vert' };
    groups.set(12, again);
    for (const { stores } of engines)
      await sql(stores, 'UPDATE groups SET name = $1 WHERE id = 12', [again.name]);
    assert.deepEqual((await expectEverywhere(groups, 'cafe')).results, []);
    assert.deepEqual(
      (await expectEverywhere(groups, 'THE VERT')).results.map((g) => g.id),
      [12],
    );
  });

  test('a trigram in more groups than the index is worth: the scan gives the same pages', async () => {
    await reset();
    // Past the bound of candidates (10 000), the search scans; the count and pages are the same.
    const groups = new Map<number, Texts>();
    for (let id = 1; id <= 10_050; id++) {
      groups.set(id, {
        id,
        name: `Team ${String(id).padStart(5, '0')}`,
        short_description: id % 3 === 0 ? 'rare words' : '',
        description: 'Every team plays',
        type: (id % 2) as GroupType,
      });
    }
    await load(groups);
    for (const [q, type, page] of [
      ['team', null, 1],
      ['TEAM', 0, 3],
      ['team 0', null, 202],
      ['team 1', null, 2],
      ['plays', 1, 101],
      ['rare', null, 67],
      ['te', null, 1],
      ['', 1, 2],
    ] as const) {
      await expectEverywhere(groups, q, type, page);
    }
  });

  test('random texts and queries: both engines answer as the oracle, before and after SQL changes', async () => {
    await reset();
    const piece = fc.constantFrom(
      'a',
      'b',
      'A',
      'É',
      'e\u0301',
      'é',
      'ß',
      'ss',
      'ﬁ',
      'İ',
      'i',
      'Σ',
      'ς',
      'σ',
      '😀',
      '1',
      '²',
      ' ',
      '  ',
      '\t',
      '"',
      '%',
      '_',
      '\\',
      '*',
      '-',
      'x',
    );
    const text = (max: number) => fc.array(piece, { maxLength: max }).map((parts) => parts.join(''));
    const groups = new Map<number, Texts>();
    const textsOf = fc.sample(fc.tuple(text(6), text(12), text(20), fc.constantFrom(0, 1)), {
      numRuns: 60,
      seed: 42,
    });
    textsOf.forEach(([name, short_description, description, type], i) => {
      const id = i + 1;
      groups.set(id, { id, name: `g${id}:${name}`, short_description, description, type: type as GroupType });
    });
    await load(groups);
    let renames = 0;
    const query = fc.oneof(
      text(5),
      fc
        .tuple(fc.integer({ min: 1, max: 60 }), fc.nat(30), fc.integer({ min: 1, max: 6 }))
        .map(([id, from, length]) => {
          const group = groups.get(id);
          const all =
            group === undefined ? '' : `${group.name} ${group.short_description} ${group.description}`;
          return Array.from(all)
            .slice(from, from + length)
            .join('');
        }),
    );
    const step = fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record({ q: query, type: fc.constantFrom(null, 0, 1), page: fc.constantFrom(1, 1, 2) }),
      },
      { weight: 1, arbitrary: fc.record({ rename: fc.integer({ min: 1, max: 60 }), name: text(6) }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
        for (const s of steps) {
          if ('rename' in s) {
            const group = groups.get(s.rename)!;
            const name = `r${++renames}:${s.name}`;
            groups.set(group.id, { ...group, name });
            for (const { stores } of engines)
              await sql(stores, 'UPDATE groups SET name = $1 WHERE id = $2', [name, group.id]);
          } else await expectEverywhere(groups, s.q, s.type as GroupType | null, s.page);
        }
      }),
      { numRuns: 40 },
    );
  });
});
