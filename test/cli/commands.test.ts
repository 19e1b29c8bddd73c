// Contract §6: the `clubhouse` admin command line, in-process through runCli and as a real process
// through bin/clubhouse.js (what `npx clubhouse` runs), against the database the server has open.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { hashSessionId, newSessionId } from '../../src/auth/sessions.ts';
import { runCli } from '../../src/cli/main.ts';
import { applyImport } from '../../src/groups/import.ts';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/schema.ts';
import { openSqliteStores } from '../../src/store/sqlite/store.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { sqliteDb } from '../helpers/engines.ts';

/** Every migration a fresh SQLite database gets, as `clubhouse migrate` lists them. */
const SQLITE_VERSIONS = SQLITE_MIGRATIONS.map((migration) => migration.version).join(', ');
const BIN = fileURLToPath(new URL('../../bin/clubhouse.js', import.meta.url));

// Every command of contract §6, and `config check`.
const COMMAND_NAMES = [
  'config check',
  'migrate',
  'import',
  'export',
  'group add',
  'group update',
  'group remove',
  'group list',
  'member set',
  'member remove',
  'user list',
  'user disable',
  'user enable',
  'user merge',
  'sessions purge-expired',
  'sessions list',
  'sessions revoke',
  // contract §11.
  'sync groups',
  // contract §12.
  'passkeys list',
  'passkeys remove',
  'passkeys reset',
];

const FIXTURE = {
  groups: [
    {
      id: 1,
      name: 'Chess Club',
      description: 'Games.',
      short_description: 'Moves.',
      activities: 'Tuesdays.',
      type: 0,
    },
    { id: 2, name: 'Biology 2B', description: 'Cells.', short_description: '', activities: 'Labs.', type: 1 },
  ],
  users: [{ username: 'dave', active: false }],
  memberships: [
    { group: 1, username: 'alice', status: 1 },
    { group: 2, username: 'bob', status: 2 },
  ],
};

interface Run {
  readonly code: number;
  readonly out: string[];
  readonly err: string[];
}

/** Runs the CLI in this process, collecting what it prints. */
async function cli(env: Record<string, string>, ...argv: string[]): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, env, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out, err };
}

function assertUsage(run: Run, what: string) {
  assert.equal(run.code, 2, `${what}: ${run.err.join('\n')}`);
  assert.deepEqual(run.out, [], what);
  assert.equal(run.err.length, 1, what);
  assert.match(run.err[0] ?? '', /^clubhouse: /, what);
  assert.match(run.err[0] ?? '', /Usage: clubhouse /, `${what}: a usage error shows the usage`);
}

function assertFailure(run: Run, message: string | RegExp, what: string) {
  assert.equal(run.code, 1, `${what}: ${run.err.join('\n')}`);
  assert.deepEqual(run.out, [], what);
  assert.equal(run.err.length, 1, what);
  if (typeof message === 'string') assert.equal(run.err[0], `clubhouse: ${message}`, what);
  else assert.match(run.err[0] ?? '', message, what);
}

function assertOk(run: Run, out: string[], what = '') {
  assert.equal(run.code, 0, `${what}: ${run.err.join('\n')}`);
  assert.deepEqual(run.err, [], what);
  assert.deepEqual(run.out, out, what);
}

function parseOnly(run: Run): unknown {
  assert.equal(run.code, 0, run.err.join('\n'));
  assert.equal(run.out.length, 1);
  return JSON.parse(run.out[0] ?? '');
}

describe('clubhouse in-process (runCli)', () => {
  let dir: string;
  let databases = 0;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'clubhouse-cli-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Settings for a fresh database file. */
  const freshEnv = () => ({ DATABASE_URL: `sqlite:${join(dir, `db-${++databases}.sqlite`)}` });

  test('--help lists every command of contract §6 and exits 0', async () => {
    for (const flag of ['--help', '-h', 'help']) {
      const run = await cli(freshEnv(), flag);
      assert.equal(run.code, 0);
      assert.deepEqual(run.err, []);
      const text = run.out.join('\n');
      assert.match(text, /^Usage: clubhouse COMMAND/);
      const listed = text
        .split('\n')
        .filter((line) => line.startsWith('  '))
        .map((line) => line.trim().split(/ {2,}/)[0]);
      assert.deepEqual(listed.sort(), [...COMMAND_NAMES].sort(), flag);
    }
  });

  test('--help on every command exits 0, prints its usage and does not open the database', async () => {
    const untouched = join(dir, 'untouched');
    const env = { DATABASE_URL: `sqlite:${join(untouched, 'db.sqlite')}` };
    for (const name of COMMAND_NAMES) {
      for (const flag of ['--help', '-h']) {
        const run = await cli(env, ...name.split(' '), flag);
        assert.equal(run.code, 0, name);
        assert.deepEqual(run.err, [], name);
        assert.equal(run.out.length, 1, name);
        assert.ok(run.out[0]?.startsWith(`Usage: clubhouse ${name}`), `${name}: ${run.out[0]}`);
      }
    }
    assert.equal(existsSync(untouched), false, '--help touches no database');
  });

  test('usage errors exit 2: no command, unknown command, missing or extra argument, bad option value', async () => {
    const env = freshEnv();
    const none = await cli(env);
    assert.equal(none.code, 2);
    assert.deepEqual(none.out, [], 'the usage goes to stderr');
    assert.match(none.err.join('\n'), /^Usage: clubhouse COMMAND/);
    for (const argv of [['frobnicate'], ['group'], ['group', 'frobnicate'], ['--json', 'group', 'list']]) {
      const run = await cli(env, ...argv);
      assert.equal(run.code, 2, argv.join(' '));
      assert.deepEqual(run.out, []);
      assert.match(run.err[0] ?? '', /^clubhouse: unknown command "/, argv.join(' '));
      assert.match(run.err[0] ?? '', /Commands:\n {2}config check/, 'the general usage is shown');
    }
    const cases: string[][] = [
      ['import'],
      ['import', 'a.json', 'b.json'],
      ['member', 'set', '1', 'alice'],
      ['member', 'remove', '1'],
      ['user', 'disable'],
      ['sessions', 'revoke'],
      ['user', 'list', 'extra'],
      ['group', 'list', '--bogus'],
      ['group', 'list', '--json=1'],
      ['group', 'add'],
      ['group', 'add', '--name', ''],
      ['group', 'add', '--name', 'X', '--type', '2'],
      ['group', 'add', '--name', 'X', '--type', 'classroom'],
      ['group', 'add', '--name', 'X', '--id', 'abc'],
      ['group', 'add', '--name', 'X', '--id', '0'],
      ['group', 'add', '--name', 'X', '--id', '2147483648'],
      ['group', 'add', '--name', 'X', '--short-description', 's'.repeat(501)],
      ['group', 'update', '1', '--id', '2'],
      ['group', 'update', 'abc'],
      ['group', 'remove', '-1'],
      ['member', 'set', '1', 'alice', '7'],
      ['member', 'set', '1', 'alice', 'owner'],
      ['member', 'set', '0', 'alice', '1'],
      ['member', 'set', '1', 'two words', '1'],
      ['user', 'disable', ' '],
    ];
    for (const argv of cases) assertUsage(await cli(env, ...argv), argv.join(' '));
    const badSetting = await cli({ DATABASE_URL: 'mysql://db' }, 'group', 'list');
    assert.equal(badSetting.code, 2);
    assert.match(badSetting.err[0] ?? '', /^clubhouse: invalid setting DATABASE_URL: /);
  });

  // contract §3, one person one identity: a USERNAME argument is canonical or refused.
  test('USERNAME arguments are canonicalised by the PRECIS profile, or refused with the reason', async () => {
    const env = freshEnv();
    assert.equal((await cli(env, 'group', 'add', '--name', 'Chess Club')).code, 0);
    assertOk(await cli(env, 'member', 'set', '1', 'ＬＥＮＡ', '1'), ['lena in group 1: status 1.']);
    assertOk(await cli(env, 'user', 'disable', 'Ｌｅｎａ'), ['Disabled lena; ended 0 sessions.']);
    for (const name of ['𝐥𝐞𝐧𝐚', 'ⓛⓔⓝⓐ']) {
      const run = await cli(env, 'user', 'enable', name);
      assertUsage(run, name);
      assert.match(
        run.err[0] ?? '',
        /^clubhouse: USERNAME must be allowed by the UsernameCaseMapped profile \(RFC 8265\): U\+[0-9A-F]+ is not allowed: compatibility character/,
      );
    }
    const preserve = { ...env, USERNAME_CASE: 'preserve' };
    assertOk(await cli(preserve, 'member', 'set', '1', 'ＬＥＮＡ', '2'), ['LENA in group 1: status 2.']);
    assert.deepEqual(
      (parseOnly(await cli(env, 'user', 'list', '--json')) as { username: string }[]).map((u) => u.username),
      ['LENA', 'lena'],
    );
  });

  test('failures exit 1 with one message: unknown group, user or membership, name taken, bad file', async () => {
    const env = freshEnv();
    assert.equal((await cli(env, 'migrate')).code, 0);
    assert.equal((await cli(env, 'group', 'add', '--name', 'Chess Club')).code, 0);
    assertFailure(await cli(env, 'group', 'update', '99', '--name', 'X'), 'no group with id 99', 'update');
    assertFailure(await cli(env, 'group', 'remove', '99'), 'no group with id 99', 'remove');
    assertFailure(await cli(env, 'member', 'set', '99', 'alice', '1'), 'no group with id 99', 'member set');
    assertFailure(
      await cli(env, 'member', 'remove', '1', 'nobody'),
      'nobody has no membership in group 1',
      'member remove',
    );
    assertFailure(await cli(env, 'user', 'disable', 'nobody'), 'no user nobody', 'disable');
    assertFailure(await cli(env, 'user', 'enable', 'nobody'), 'no user nobody', 'enable');
    assertFailure(
      await cli(env, 'group', 'add', '--name', 'Chess Club'),
      '"Chess Club" is already the name of another group',
      'name taken',
    );
    assertFailure(
      await cli(env, 'group', 'add', '--id', '1', '--name', 'Other'),
      'group 1 exists already (use group update)',
      'id taken',
    );
    assertFailure(
      await cli(env, 'import', join(dir, 'missing.json')),
      /^clubhouse: cannot read .*missing\.json: ENOENT/,
      'no file',
    );
    const notJson = join(dir, 'not.json');
    writeFileSync(notJson, '{"groups": [');
    assertFailure(await cli(env, 'import', notJson), /^clubhouse: .*not\.json is not JSON: /, 'not JSON');
    const bad = join(dir, 'bad.json');
    writeFileSync(
      bad,
      JSON.stringify({
        groups: [
          { id: 0, name: 'x' },
          { id: 2, name: 'y', type: 3 },
        ],
      }),
    );
    assertFailure(
      await cli(env, 'import', bad),
      [
        `${bad} has 2 bad entries; nothing was changed:`,
        '  groups[0].id: must be an integer from 1 to 2147483647',
        '  groups[1].type: must be 0 (normal) or 1 (classroom)',
      ].join('\n'),
      'bad file',
    );
    const json = await cli(env, 'import', bad, '--json');
    assert.equal(json.code, 1);
    assert.deepEqual(JSON.parse(json.out[0] ?? ''), {
      ok: false,
      problems: [
        { path: 'groups[0].id', reason: 'must be an integer from 1 to 2147483647' },
        { path: 'groups[1].type', reason: 'must be 0 (normal) or 1 (classroom)' },
      ],
    });
    assert.deepEqual(JSON.parse((await cli(env, 'group', 'list', '--json')).out[0] ?? ''), [
      { id: 1, name: 'Chess Club', description: '', short_description: '', activities: '', type: 0 },
    ]);
  });

  // `group add` once read the largest id (or checked --id was free), then upserted by id, so two
  // admins adding at once overwrote each other's group. Two in-process runs interleave at every
  // await, which puts the second admin's read between the first one's read and write.
  test('two admins adding groups at once never overwrite each other', async () => {
    const env = freshEnv();
    assert.equal((await cli(env, 'migrate')).code, 0);
    const [first, second] = await Promise.all([
      cli(env, 'group', 'add', '--name', 'Chess Club'),
      cli(env, 'group', 'add', '--name', 'Go Club'),
    ]);
    assertOk(first, ['Added group 1: Chess Club'], 'first add');
    assertOk(second, ['Added group 2: Go Club'], 'second add gets the next id');

    const [mine, theirs] = await Promise.all([
      cli(env, 'group', 'add', '--id', '7', '--name', 'Seven'),
      cli(env, 'group', 'add', '--id', '7', '--name', 'Also Seven'),
    ]);
    assertOk(mine, ['Added group 7: Seven'], 'the first add of id 7');
    assertFailure(theirs, 'group 7 exists already (use group update)', 'the second add of id 7');
    assertOk(await cli(env, 'group', 'list'), ['1\tgroup\tChess Club\n2\tgroup\tGo Club\n7\tgroup\tSeven']);
  });

  test('migrate, group add|update|remove|list and member set|remove do what they say', async () => {
    const env = freshEnv();
    assertOk(await cli(env, 'migrate'), [`Applied migrations: ${SQLITE_VERSIONS}.`]);
    assertOk(await cli(env, 'migrate'), ['Database is up to date.']);
    assert.deepEqual(parseOnly(await cli(env, 'migrate', '--json')), { applied: [], usernames: [] });
    assertOk(await cli(env, 'group', 'list'), ['No groups.']);
    assertOk(await cli(env, 'group', 'add', '--name', 'Chess Club'), ['Added group 1: Chess Club']);
    assert.deepEqual(
      parseOnly(
        await cli(
          env,
          'group',
          'add',
          '--name',
          'Bio',
          '--type',
          '1',
          '--short-description',
          'Year 2',
          '--json',
        ),
      ),
      { id: 2, name: 'Bio', description: '', short_description: 'Year 2', activities: '', type: 1 },
    );
    assertOk(await cli(env, 'group', 'add', '--id', '007', '--name', 'Seven'), ['Added group 7: Seven']);
    assertOk(await cli(env, 'group', 'add', '--name', 'Eight'), ['Added group 8: Eight'], 'next free id');
    assertOk(await cli(env, 'group', 'update', '2', '--description', 'Cells.', '--activities', 'Labs.'), [
      'Updated group 2: Bio',
    ]);
    assertOk(await cli(env, 'group', 'list'), [
      '1\tgroup\tChess Club\n2\tclassroom\tBio\n7\tgroup\tSeven\n8\tgroup\tEight',
    ]);
    assertOk(await cli(env, 'group', 'remove', '8'), ['Removed group 8.']);
    assert.deepEqual(parseOnly(await cli(env, 'group', 'remove', '7', '--json')), { removed: 7 });
    assert.deepEqual(parseOnly(await cli(env, 'group', 'list', '--json')), [
      { id: 1, name: 'Chess Club', description: '', short_description: '', activities: '', type: 0 },
      {
        id: 2,
        name: 'Bio',
        description: 'Cells.',
        short_description: 'Year 2',
        activities: 'Labs.',
        type: 1,
      },
    ]);

    assertOk(await cli(env, 'member', 'set', '1', ' Alice ', '1'), ['alice in group 1: status 1.']);
    assertOk(await cli(env, 'member', 'set', '2', 'alice', 'admin'), ['alice in group 2: status 2.']);
    assert.deepEqual(parseOnly(await cli(env, 'member', 'set', '2', 'bob', 'pending', '--json')), {
      group: 2,
      username: 'bob',
      status: 0,
    });
    assertOk(await cli(env, 'member', 'remove', '2', 'ALICE'), ['Removed alice from group 2.']);
    const users = parseOnly(await cli(env, 'user', 'list', '--json')) as {
      username: string;
      active: boolean;
    }[];
    assert.deepEqual(
      users.map((u) => [u.username, u.active]),
      [
        ['alice', true],
        ['bob', true],
      ],
      'member set creates the user',
    );
    assertOk(await cli(env, 'user', 'list'), [
      'alice\tactive\tlast login never\nbob\tactive\tlast login never',
    ]);
    const exported = parseOnly(await cli(env, 'export')) as { memberships: unknown };
    assert.deepEqual(exported.memberships, [
      { group: 1, username: 'alice', status: 1 },
      { group: 2, username: 'bob', status: 0 },
    ]);
  });

  test('import --json reports counts; export re-imports to the same state', async () => {
    const source = freshEnv();
    const file = join(dir, 'fixture.json');
    writeFileSync(file, JSON.stringify(FIXTURE));
    assertOk(await cli(source, 'import', file), ['Imported 2 groups, 1 users, 2 memberships.']);
    assert.deepEqual(parseOnly(await cli(source, 'import', file, '--json')), {
      ok: true,
      groups: 2,
      users: 1,
      memberships: 2,
    });
    const exported = await cli(source, 'export');
    const state = parseOnly(exported);
    assert.deepEqual(parseOnly(await cli(source, 'export', '--json')), state);
    assert.deepEqual(state, {
      groups: FIXTURE.groups,
      users: [
        { username: 'alice', active: true },
        { username: 'bob', active: true },
        { username: 'dave', active: false },
      ],
      memberships: FIXTURE.memberships,
    });
    const copy = join(dir, 'export.json');
    writeFileSync(copy, exported.out.join('\n'));
    const target = freshEnv();
    assertOk(await cli(target, 'import', copy), ['Imported 2 groups, 3 users, 2 memberships.']);
    assert.deepEqual(parseOnly(await cli(target, 'export')), state);
  });
});

describe('clubhouse against the database the server has open', () => {
  let t: TestApp;
  let env: Record<string, string>;
  let db: DatabaseSync;
  before(async () => {
    t = await startTestApp({ authenticator: fakeAuthenticator({ alice: 'pw', bob: 'pw', erin: 'pw' }) });
    env = { DATABASE_URL: t.config.databaseUrl };
    db = sqliteDb(t.stores);
    assert.deepEqual(await applyImport(t.stores, FIXTURE, t.config.usernameCase), {
      ok: true,
      counts: { groups: 2, users: 1, memberships: 2 },
    });
  });
  after(() => t.close());

  const sessionsOf = (username: string) =>
    Number(db.prepare('SELECT count(*) AS n FROM sessions WHERE username = ?').get(username)?.['n']);
  const check = (cookie: string) => t.fastify.inject({ url: '/api/auth/check', headers: { cookie } });
  const groups = (cookie: string) => t.fastify.inject({ url: '/api/group/', headers: { cookie } });

  test('the database is in WAL mode, so the CLI and the server share it', () => {
    assert.equal(db.prepare('PRAGMA journal_mode').get()?.['journal_mode'], 'wal');
  });

  test('user disable deletes all of the user sessions; user enable does not revive them', async () => {
    const first = await loginAs(t.fastify, 'alice', 'pw');
    const second = await loginAs(t.fastify, 'ALICE', 'pw');
    const bob = await loginAs(t.fastify, 'bob', 'pw');
    assert.equal(sessionsOf('alice'), 2);
    assertOk(await cli(env, 'user', 'disable', 'Alice'), ['Disabled alice; ended 2 sessions.']);
    assert.equal(sessionsOf('alice'), 0);
    for (const { cookie } of [first, second]) {
      assert.equal((await check(cookie)).statusCode, 403);
      assert.equal((await groups(cookie)).statusCode, 403);
    }
    assert.equal((await check(bob.cookie)).body, '"bob"', "other users' sessions stay");
    assert.equal((await loginAs(t.fastify, 'alice', 'pw')).response.statusCode, 403, 'disabled: no login');
    const listed = parseOnly(await cli(env, 'user', 'list', '--json')) as {
      username: string;
      active: boolean;
    }[];
    assert.equal(listed.find((u) => u.username === 'alice')?.active, false);

    assert.deepEqual(parseOnly(await cli(env, 'user', 'enable', 'alice', '--json')), {
      username: 'alice',
      active: true,
    });
    assert.equal(sessionsOf('alice'), 0);
    for (const { cookie } of [first, second]) {
      assert.equal((await check(cookie)).statusCode, 403, 're-enabling revives no session');
      assert.equal((await groups(cookie)).statusCode, 403);
    }
    const again = await loginAs(t.fastify, 'alice', 'pw');
    assert.equal(again.response.statusCode, 200, 'enabled: login works again');
    assert.deepEqual((await groups(again.cookie)).json(), [FIXTURE.groups[0]]);
  });

  test('sessions revoke USERNAME ends every session of that user without disabling them', async () => {
    const one = await loginAs(t.fastify, 'bob', 'pw');
    const two = await loginAs(t.fastify, 'bob', 'pw');
    const alice = await loginAs(t.fastify, 'alice', 'pw');
    const revoked = sessionsOf('bob');
    assert.ok(revoked >= 2);
    assert.deepEqual(parseOnly(await cli(env, 'sessions', 'revoke', 'BOB', '--json')), {
      username: 'bob',
      revoked,
    });
    assert.equal(sessionsOf('bob'), 0);
    for (const { cookie } of [one, two]) assert.equal((await check(cookie)).statusCode, 403);
    assert.equal((await check(alice.cookie)).body, '"alice"');
    const back = await loginAs(t.fastify, 'bob', 'pw');
    assert.equal(back.response.statusCode, 200, 'bob is not disabled');
    assertOk(await cli(env, 'sessions', 'revoke', 'bob'), ['Ended 1 sessions of bob.']);
    assertOk(await cli(env, 'sessions', 'revoke', 'nobody'), ['Ended 0 sessions of nobody.']);
  });

  test('sessions list USERNAME prints the sessions the user sees, with the same ids, newest first', async () => {
    await cli(env, 'sessions', 'revoke', 'bob');
    const laptop = await loginAs(t.fastify, 'bob', 'pw', { 'user-agent': 'Firefox\tlaptop' });
    await new Promise((resolve) => setTimeout(resolve, 5));
    await loginAs(t.fastify, 'bob', 'pw', { 'user-agent': '' });
    const seen = (
      await t.fastify.inject({ url: '/api/auth/sessions', headers: { cookie: laptop.cookie } })
    ).json() as {
      id: string;
      current: boolean;
    }[];
    const listed = parseOnly(await cli(env, 'sessions', 'list', 'BOB', '--json')) as {
      username: string;
      sessions: { id: string; current: boolean; ip: string; user_agent: string | null }[];
    };
    assert.equal(listed.username, 'bob');
    assert.deepEqual(
      listed.sessions.map((s) => s.id),
      seen.map((s) => s.id),
    );
    assert.ok(
      listed.sessions.every((s) => s.current === false),
      'the CLI has no session of its own',
    );
    assert.deepEqual(
      listed.sessions.map((s) => [s.ip, s.user_agent]),
      [
        ['127.0.0.1', null],
        ['127.0.0.1', 'Firefox\tlaptop'],
      ],
    );
    const text = await cli(env, 'sessions', 'list', 'bob');
    assert.equal(text.code, 0);
    const lines = text.out.join('\n').split('\n');
    assert.equal(lines.length, 2);
    assert.match(
      lines[0] ?? '',
      /^[0-9a-f]{32}\t\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\tlast seen \S+Z\t127\.0\.0\.1\t-$/,
    );
    assert.ok(lines[1]?.endsWith('\tFirefox\tlaptop'));
    await cli(env, 'sessions', 'revoke', 'bob');
    assertOk(await cli(env, 'sessions', 'list', 'bob'), ['No sessions of bob.']);
    assertFailure(await cli(env, 'sessions', 'list', 'nobody'), 'no user nobody', 'an unknown user');
    assertUsage(await cli(env, 'sessions', 'list'), 'no USERNAME');
  });

  test('sessions purge-expired deletes only expired sessions', async () => {
    const live = await loginAs(t.fastify, 'erin', 'pw');
    const now = Date.now();
    const make = async (expiresAt: number) => {
      const idHash = hashSessionId(newSessionId());
      await t.stores.sessions.create(
        {
          idHash,
          username: 'erin',
          createdAt: expiresAt - 1_209_600_000,
          expiresAt,
          clientIp: null,
          userAgent: null,
        },
        100,
      );
      return idHash;
    };
    const expired = [await make(now - 1), await make(now - 86_400_000), await make(now - 1_209_600_000)];
    const future = [await make(now + 60_000), await make(now + 1_209_600_000)];
    const exists = (idHash: Buffer) =>
      db.prepare('SELECT 1 FROM sessions WHERE id_hash = ?').get(idHash) !== undefined;
    const before = Number(db.prepare('SELECT count(*) AS n FROM sessions').get()?.['n']);
    assert.deepEqual(parseOnly(await cli(env, 'sessions', 'purge-expired', '--json')), { purged: 3 });
    assert.equal(Number(db.prepare('SELECT count(*) AS n FROM sessions').get()?.['n']), before - 3);
    for (const idHash of expired) assert.equal(exists(idHash), false);
    for (const idHash of future) assert.equal(exists(idHash), true);
    assert.equal((await check(live.cookie)).body, '"erin"');
    assertOk(await cli(env, 'sessions', 'purge-expired'), ['Deleted 0 expired sessions.']);
  });

  test('changes made with the CLI show on the very next request to the running server', async () => {
    const { cookie } = await loginAs(t.fastify, 'erin', 'pw');
    assert.equal((await groups(cookie)).body, '[]');
    assertOk(await cli(env, 'member', 'set', '2', 'erin', '1'), ['erin in group 2: status 1.']);
    assert.deepEqual((await groups(cookie)).json(), [FIXTURE.groups[1]]);
    assertOk(await cli(env, 'group', 'update', '2', '--name', 'Biology 3A'), ['Updated group 2: Biology 3A']);
    const detail = await t.fastify.inject({ url: '/api/group/2', headers: { cookie } });
    assert.deepEqual(detail.json(), { ...FIXTURE.groups[1], name: 'Biology 3A', member_status: 1 });
    assertOk(await cli(env, 'member', 'set', '2', 'erin', '0'), ['erin in group 2: status 0.']);
    assert.equal((await groups(cookie)).body, '[]');
    assertOk(await cli(env, 'group', 'add', '--name', 'Temporary'), ['Added group 3: Temporary']);
    assert.equal((await t.fastify.inject({ url: '/api/group/3', headers: { cookie } })).statusCode, 200);
    assertOk(await cli(env, 'group', 'remove', '3'), ['Removed group 3.']);
    const gone = await t.fastify.inject({ url: '/api/group/3', headers: { cookie } });
    assert.equal(gone.statusCode, 404);
    assert.deepEqual(gone.json(), { detail: 'Not found.' });
  });
});

interface ProcessResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `node bin/clubhouse.js ARGS` as a real process, the way `npx clubhouse` does. */
function runBin(
  args: string[],
  options: { env: Record<string, string>; cwd: string; input?: string; node?: string },
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(options.node ?? process.execPath, [BIN, ...args], {
      cwd: options.cwd,
      env: { PATH: process.env['PATH'] ?? '', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

describe('clubhouse as a real process (bin/clubhouse.js)', () => {
  let t: TestApp;
  let cwd: string;
  let env: Record<string, string>;
  before(async () => {
    t = await startTestApp({ authenticator: fakeAuthenticator({ alice: 'pw' }) });
    // Its own working directory: no stray .env is read.
    cwd = mkdtempSync(join(tmpdir(), 'clubhouse-bin-'));
    env = { DATABASE_URL: t.config.databaseUrl };
  });
  after(async () => {
    await t.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  test('--help exits 0 and lists every command; an unknown command exits 2 on stderr', async () => {
    const help = await runBin(['--help'], { env, cwd });
    assert.equal(help.code, 0, help.stderr);
    assert.equal(help.stderr, '');
    for (const name of COMMAND_NAMES) assert.match(help.stdout, new RegExp(`\\n  ${name} +\\S`), name);
    const unknown = await runBin(['frobnicate'], { env, cwd });
    assert.equal(unknown.code, 2);
    assert.equal(unknown.stdout, '');
    assert.match(unknown.stderr, /^clubhouse: unknown command "frobnicate"/);
  });

  test('import from a file and from standard input, export, and a failure exit 1, while the server runs', async () => {
    const file = join(cwd, 'fixture.json');
    writeFileSync(file, JSON.stringify(FIXTURE));
    const imported = await runBin(['import', file, '--json'], { env, cwd });
    assert.equal(imported.code, 0, imported.stderr);
    assert.deepEqual(JSON.parse(imported.stdout), { ok: true, groups: 2, users: 1, memberships: 2 });

    const fromStdin = await runBin(['import', '-'], {
      env,
      cwd,
      input: JSON.stringify({ memberships: [{ group: 2, username: 'alice', status: 2 }] }),
    });
    assert.equal(fromStdin.code, 0, fromStdin.stderr);
    assert.equal(fromStdin.stdout, 'Imported 0 groups, 0 users, 1 memberships.\n');

    const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
    const list = await t.fastify.inject({ url: '/api/group/', headers: { cookie } });
    assert.deepEqual(list.json(), FIXTURE.groups, 'the server sees what the process wrote');

    const exported = await runBin(['export'], { env, cwd });
    assert.equal(exported.code, 0, exported.stderr);
    assert.deepEqual(JSON.parse(exported.stdout), await t.stores.groups.exportData());

    const failed = await runBin(['group', 'remove', '99'], { env, cwd });
    assert.equal(failed.code, 1);
    assert.equal(failed.stdout, '');
    assert.equal(failed.stderr, 'clubhouse: no group with id 99\n');
  });

  test('user disable in another process ends the session the server holds', async () => {
    const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
    const groupsNow = await t.fastify.inject({ url: '/api/group/1', headers: { cookie } });
    assert.equal(groupsNow.statusCode, 200);
    const disabled = await runBin(['user', 'disable', 'alice', '--json'], { env, cwd });
    assert.equal(disabled.code, 0, disabled.stderr);
    assert.equal(JSON.parse(disabled.stdout).username, 'alice');
    const after = await t.fastify.inject({ url: '/api/group/1', headers: { cookie } });
    assert.equal(after.statusCode, 403);
    assert.deepEqual(after.json(), { detail: 'Authentication credentials were not provided.' });
  });

  test('a fresh database file is created and migrated by the first command', async () => {
    const fresh = { DATABASE_URL: `sqlite:${join(cwd, 'new', 'clubhouse.db')}` };
    const migrate = await runBin(['migrate'], { env: fresh, cwd });
    assert.equal(migrate.code, 0, migrate.stderr);
    assert.equal(migrate.stdout, `Applied migrations: ${SQLITE_VERSIONS}.\n`);
    const stores = openSqliteStores(join(cwd, 'new', 'clubhouse.db'));
    try {
      assert.deepEqual(await stores.groups.exportData(), { groups: [], users: [], memberships: [] });
    } finally {
      await stores.close();
    }
  });

  test('started by an older node on PATH, the bin runs the CLI on the pinned Node 24', async (context) => {
    const probe = spawnSync('node', ['--version'], { encoding: 'utf8' });
    if (probe.error !== undefined || probe.status !== 0) {
      context.skip('no node on PATH');
      return;
    }
    const help = await runBin(['--help'], { env, cwd, node: 'node' });
    assert.equal(help.code, 0, `${probe.stdout.trim()}: ${help.stderr}`);
    assert.match(help.stdout, /^Usage: clubhouse COMMAND/);
  });
});
