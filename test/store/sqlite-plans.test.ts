// SQLite: the two group queries stay index lookups at scale: with 100 000 groups and 1 000 000
// memberships, EXPLAIN QUERY PLAN shows only primary-key/index searches (no table scan, no sort),
// and the endpoints still answer exactly. The plan is asserted, not a time.
import assert from 'node:assert/strict';
import type { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { applyImport } from '../../src/groups/import.ts';
import { GROUP_QUERIES } from '../../src/store/sqlite/store.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { sqliteDb } from '../helpers/engines.ts';

const GROUPS = 100_000;
const OTHER_USERS = 49_999;
const PER_USER = 20;

// alice's 20 memberships, spread over the id range, statuses 0, 1, 2 in turn, listed out of id order.
const ALICE = Array.from({ length: PER_USER }, (_, k) => ({
  group: ((k * 7919 + 4243) % GROUPS) + 1,
  username: 'alice',
  status: (k % 3) as 0 | 1 | 2,
}));

/** The group the SQL below generates for `id`. */
function generated(id: number) {
  return {
    id,
    name: `group ${id}`,
    description: `description ${id}`,
    short_description: '',
    activities: `activities ${id}`,
    type: id % 2,
  };
}

function planOf(db: DatabaseSync, sql: string): string[] {
  return db
    .prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .all()
    .map((row) => String(row['detail']));
}

/** Every step is a search by primary key or index; nothing scans a table or sorts in a temp B-tree. */
function assertIndexOnly(plan: string[], what: string) {
  const shown = `${what}:\n  ${plan.join('\n  ')}`;
  assert.ok(plan.length >= 2, shown);
  for (const step of plan) {
    assert.match(step, /^SEARCH [gm] USING (INTEGER PRIMARY KEY|PRIMARY KEY|INDEX|COVERING INDEX) /, shown);
    assert.doesNotMatch(step, /\bSCAN\b/, shown);
    assert.doesNotMatch(step, /TEMP B-TREE/, shown);
  }
  assert.ok(
    plan.some((step) => step.startsWith('SEARCH g ')),
    shown,
  );
  assert.ok(
    plan.some((step) => step.startsWith('SEARCH m ')),
    shown,
  );
}

describe('group queries at scale (100 000 groups, 1 000 000 memberships)', () => {
  let t: TestApp;
  let db: DatabaseSync;
  before(async () => {
    t = await startTestApp({ authenticator: fakeAuthenticator({ alice: 'pw' }) });
    db = sqliteDb(t.stores);
    // The bulk goes in as SQL in one transaction; alice's rows go through the import path.
    db.exec('BEGIN IMMEDIATE');
    db.exec(`
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${GROUPS})
      INSERT INTO groups (id, name, description, short_description, activities, type)
      SELECT i, 'group ' || i, 'description ' || i, '', 'activities ' || i, i % 2 FROM n;
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${OTHER_USERS})
      INSERT INTO users (username, active, created_at) SELECT printf('user%05d', i), 1, 0 FROM n;
      WITH RECURSIVE
        n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${OTHER_USERS}),
        k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < ${PER_USER - 1})
      INSERT INTO memberships (username, group_id, status)
      SELECT printf('user%05d', i), ((i * 37 + j * 4999) % ${GROUPS}) + 1, (i + j) % 3 FROM n, k;
    `);
    db.exec('COMMIT');
    const imported = await applyImport(t.stores, { memberships: ALICE }, t.config.usernameCase);
    assert.deepEqual(imported, { ok: true, counts: { groups: 0, users: 0, memberships: PER_USER } });
  });
  after(() => t.close());

  test('the fixture has the advertised size', () => {
    const count = (table: string) => Number(db.prepare(`SELECT count(*) AS n FROM ${table}`).get()?.['n']);
    assert.equal(count('groups'), 100_000);
    assert.equal(count('memberships'), 1_000_000);
    assert.equal(new Set(ALICE.map((m) => m.group)).size, PER_USER, 'alice has 20 distinct groups');
  });

  test('listForMember and detail are primary-key searches, without and with statistics', () => {
    assertIndexOnly(planOf(db, GROUP_QUERIES.listForMember), 'listForMember');
    assertIndexOnly(planOf(db, GROUP_QUERIES.detail), 'detail');
    // What `PRAGMA optimize` would gather: the planner must not change its mind with statistics.
    db.exec('PRAGMA analysis_limit = 1000; ANALYZE;');
    assertIndexOnly(planOf(db, GROUP_QUERIES.listForMember), 'listForMember after ANALYZE');
    assertIndexOnly(planOf(db, GROUP_QUERIES.detail), 'detail after ANALYZE');
  });

  test("the list answers exactly alice's groups with status 1 or 2, in id order", async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
    const response = await t.fastify.inject({ url: '/api/group/', headers: { cookie } });
    assert.equal(response.statusCode, 200);
    const expected = ALICE.filter((m) => m.status !== 0)
      .map((m) => m.group)
      .sort((a, b) => a - b)
      .map(generated);
    assert.equal(expected.length, 13);
    assert.deepEqual(response.json(), expected);
  });

  test("the detail answers each of alice's 20 groups with her status, others with -1, unknown ids 404", async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
    const get = (id: number) => t.fastify.inject({ url: `/api/group/${id}`, headers: { cookie } });
    for (const membership of ALICE) {
      const response = await get(membership.group);
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { ...generated(membership.group), member_status: membership.status });
    }
    const mine = new Set(ALICE.map((m) => m.group));
    const other = [1, 2, 50_000, 100_000].find((id) => !mine.has(id)) ?? 0;
    const stranger = await get(other);
    assert.equal(stranger.statusCode, 200);
    assert.deepEqual(stranger.json(), { ...generated(other), member_status: -1 });
    const unknown = await get(GROUPS + 1);
    assert.equal(unknown.statusCode, 404);
    assert.deepEqual(unknown.json(), { detail: 'Not found.' });
  });
});
