// Contract §3, one person one identity: the migration of stored usernames, on every
// store. Names stored before canonical usernames (ＬＥＮＡ beside lena, Bob, 𝐥𝐞𝐧𝐚) are renamed,
// or disabled and listed for an administrator, by `clubhouse migrate` and `config check`, and the
// sessions they held end wherever sessions live.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { hashSessionId, newSessionId } from '../../src/auth/sessions.ts';
import { migrateUsernames } from '../../src/auth/username-migration.ts';
import { runCli } from '../../src/cli/main.ts';
import { loadConfig } from '../../src/config/config.ts';
import { openStores } from '../../src/store/open.ts';
import type { Stores } from '../../src/store/types.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const GROUP = { description: '', short_description: '', activities: '', type: 0 } as const;

/** Stores users, memberships and one live session each, exactly as named (no canonical form). */
async function seed(stores: Stores, users: readonly string[]): Promise<void> {
  await stores.groups.importData({
    groups: users.map((_, i) => ({ id: i + 1, name: `Group ${i + 1}`, ...GROUP })),
    users: users.map((username) => ({ username, active: true })),
    memberships: users.map((username, i) => ({ group: i + 1, username, status: 1 })),
  });
  const now = Date.now();
  for (const username of users) {
    const session = { username, createdAt: now, expiresAt: now + 3_600_000, clientIp: null, userAgent: null };
    await stores.sessions.create({ idHash: hashSessionId(newSessionId()), ...session }, 100);
  }
}

async function cli(env: Record<string, string>, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, env, { out: (text) => out.push(text), err: (text) => err.push(text) });
  assert.equal(code, 0, err.join('\n'));
  return JSON.parse(out.join('\n'));
}

const state = async (stores: Stores) => {
  const now = Date.now();
  const users = await stores.users.list();
  const { memberships } = await stores.groups.exportData();
  return Promise.all(
    users.map(async (user) => ({
      username: user.username,
      active: user.active,
      groups: memberships.filter((m) => m.username === user.username).map((m) => m.group),
      sessions: await stores.sessions.countUser(user.username, now),
    })),
  );
};

describeEachStore('the migration to canonical usernames', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ store, authenticator: fakeAuthenticator({ bob: 'bob-pw' }) });
    await seed(t.stores, ['lena', 'ＬＥＮＡ', 'Bob', '𝐥𝐞𝐧𝐚']);
  });
  after(() => t.close());

  test('`clubhouse migrate` renames, disables and lists; their sessions end', async () => {
    const { usernames } = await cli(t.storeEnv, 'migrate', '--json');
    assert.deepEqual(
      usernames.map((f: { username: string; canonical: string | null; outcome: string }) => [
        f.username,
        f.canonical,
        f.outcome,
      ]),
      [
        ['Bob', 'bob', 'renamed'],
        ['ＬＥＮＡ', 'lena', 'collides'],
        ['𝐥𝐞𝐧𝐚', null, 'refused'],
      ],
    );
    assert.deepEqual(await state(t.stores), [
      { username: 'bob', active: true, groups: [3], sessions: 0 },
      { username: 'lena', active: true, groups: [1], sessions: 1 },
      { username: 'ＬＥＮＡ', active: false, groups: [2], sessions: 0 },
      { username: '𝐥𝐞𝐧𝐚', active: false, groups: [4], sessions: 0 },
    ]);
    assert.equal(await t.stores.sessions.countUser('Bob', Date.now()), 0, 'no session holds the old name');
  });

  test('the renamed user logs in under the canonical name with the memberships', async () => {
    const { response, cookie } = await loginAs(t.fastify, 'Bob', 'bob-pw');
    assert.equal(response.body, '"bob"');
    const groups = await t.fastify.inject({ url: '/api/group/', headers: { cookie } });
    assert.deepEqual(
      JSON.parse(groups.body).map((g: { id: number }) => g.id),
      [3],
    );
  });

  test('`config check` lists every pair until an administrator resolves it', async () => {
    const { usernames, warnings } = await cli(t.storeEnv, 'config', 'check', '--json');
    assert.deepEqual(
      usernames.findings.map((f: { username: string; canonical: string | null }) => [
        f.username,
        f.canonical,
      ]),
      [
        ['ＬＥＮＡ', 'lena'],
        ['𝐥𝐞𝐧𝐚', null],
      ],
    );
    assert.ok(warnings.some((w: string) => w.startsWith('stored username "ＬＥＮＡ" collides with "lena"')));
    assert.ok(warnings.some((w: string) => w.startsWith('stored username "𝐥𝐞𝐧𝐚" is refused by the profile')));
  });

  test('is idempotent, runs again for another profile, and once when several processes start together', async () => {
    assert.deepEqual((await cli(t.storeEnv, 'migrate', '--json')).usernames, []);
    await seed(t.stores, ['Zoe']); // as an older version would have stored it
    const others = await Promise.all([1, 2, 3].map(() => openStores(loadConfig(t.storeEnv).store)));
    const once = async (usernameCase: 'lower' | 'preserve') => {
      const runs = await Promise.all(others.map((stores) => migrateUsernames(stores, usernameCase)));
      const done = runs.filter((findings) => findings.length > 0);
      assert.equal(done.length, 1, 'one process did the work, the others found it done');
      return done[0]!.map((f) => [f.username, f.canonical, f.outcome]);
    };
    try {
      // UsernameCasePreserved: ＬＥＮＡ is LENA, a name nobody has (it stays disabled); Zoe is canonical.
      assert.deepEqual(await once('preserve'), [
        ['ＬＥＮＡ', 'LENA', 'renamed'],
        ['𝐥𝐞𝐧𝐚', null, 'refused'],
      ]);
      assert.deepEqual(await once('lower'), [
        ['LENA', 'lena', 'collides'],
        ['Zoe', 'zoe', 'renamed'],
        ['𝐥𝐞𝐧𝐚', null, 'refused'],
      ]);
    } finally {
      await Promise.all(others.map((stores) => stores.close()));
    }
    assert.deepEqual(
      (await state(t.stores)).map((u) => [u.username, u.active]),
      [
        ['LENA', false],
        ['bob', true],
        ['lena', true],
        ['zoe', true],
        ['𝐥𝐞𝐧𝐚', false],
      ],
    );
  });
});

describeEachStore('the migration under USERNAME_CASE=preserve', (store) => {
  test('LENA and lena stay two users; ＬＥＮＡ collides with LENA', async () => {
    const t = await startTestApp({ store, authenticator: fakeAuthenticator({}) });
    try {
      await seed(t.stores, ['LENA', 'lena', 'ＬＥＮＡ', 'ｌｅｎａ']);
      const findings = await migrateUsernames(t.stores, 'preserve');
      assert.deepEqual(
        findings.map((f) => [f.username, f.canonical, f.outcome]),
        [
          ['ＬＥＮＡ', 'LENA', 'collides'],
          ['ｌｅｎａ', 'lena', 'collides'],
        ],
      );
      assert.deepEqual(
        (await state(t.stores)).map((u) => [u.username, u.active, u.sessions]),
        [
          ['LENA', true, 1],
          ['lena', true, 1],
          ['ＬＥＮＡ', false, 0],
          ['ｌｅｎａ', false, 0],
        ],
      );
    } finally {
      await t.close();
    }
  });
});
