// `clubhouse user merge FROM INTO` (contract §3, §6): the username migration disables a stored name
// that collides with an existing canonical one, keeping its memberships; the merge gives them to
// the canonical user (the higher status winning where both have one), ends FROM's sessions and
// removes FROM, which is named exactly as stored (no canonical argument could name it). The
// migration's report and `config check` print the command for each such name, quoted for a shell.
// On every store, with a session of FROM answered from memory by a running service until the merge.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { hashSessionId, newSessionId } from '../../src/auth/sessions.ts';
import { mergeCommand } from '../../src/auth/username-migration.ts';
import { runCli } from '../../src/cli/main.ts';
import type { Stores } from '../../src/store/types.ts';
import { fakeAuthenticator, startTestApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const GROUP = { description: '', short_description: '', activities: '', type: 0 } as const;

async function cli(env: Readonly<Record<string, string>>, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const logs: Record<string, unknown>[] = [];
  const code = await runCli(argv, env, {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
    log: (line) => logs.push(JSON.parse(line) as Record<string, unknown>),
  });
  return { code, out: out.join('\n'), err: err.join('\n'), logs };
}

/** Group id → status of `username`'s memberships. */
async function memberships(stores: Stores, username: string): Promise<Record<number, number>> {
  const { memberships } = await stores.groups.exportData();
  return Object.fromEntries(
    memberships.filter((m) => m.username === username).map((m) => [m.group, m.status]),
  );
}

/** A live session of `username`, as a login would store it; its cookie. */
async function sessionOf(stores: Stores, username: string): Promise<string> {
  const id = newSessionId();
  const now = Date.now();
  await stores.sessions.create(
    {
      idHash: hashSessionId(id),
      username,
      createdAt: now,
      expiresAt: now + 3_600_000,
      clientIp: null,
      userAgent: null,
    },
    100,
  );
  return `sessionid=${id}`;
}

describeEachStore('clubhouse user merge', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ store, authenticator: fakeAuthenticator({}) });
    // As an older version stored them: ＬＥＮＡ and lena, one person under two names.
    await t.stores.groups.importData({
      groups: [1, 2, 3, 4, 5].map((id) => ({ id, name: `Group ${id}`, ...GROUP })),
      users: [
        { username: 'lena', active: true },
        { username: 'ＬＥＮＡ', active: true },
      ],
      memberships: [
        { group: 1, username: 'lena', status: 1 },
        { group: 1, username: 'ＬＥＮＡ', status: 2 },
        { group: 2, username: 'lena', status: 0 },
        { group: 2, username: 'ＬＥＮＡ', status: 1 },
        { group: 3, username: 'ＬＥＮＡ', status: 0 },
        { group: 4, username: 'lena', status: 2 },
        { group: 4, username: 'ＬＥＮＡ', status: 1 },
        { group: 5, username: 'lena', status: 1 },
      ],
    });
  });
  after(() => t.close());

  test('the migration and config check print the merge command for the pair', async () => {
    const migrated = await cli(t.storeEnv, 'migrate');
    assert.equal(migrated.code, 0, migrated.err);
    assert.match(
      migrated.out,
      /^username "ＬＥＮＡ" collides with "lena": disabled, keeps its name and memberships; to give them to "lena": clubhouse user merge ＬＥＮＡ lena$/m,
    );
    const checked = await cli(t.storeEnv, 'config', 'check');
    assert.match(
      checked.out,
      /^warning: stored username "ＬＥＮＡ" collides with "lena": .*: clubhouse user merge ＬＥＮＡ lena\.$/m,
    );
  });

  test('memberships move with the higher status winning, FROM’s sessions end, FROM is gone, and it is audited', async () => {
    const cookie = await sessionOf(t.stores, 'ＬＥＮＡ');
    const check = () => t.fastify.inject({ url: '/api/auth/check', headers: { cookie } });
    // Read twice: the second answer comes from memory where the store keeps one.
    assert.equal((await check()).statusCode, 200);
    assert.equal((await check()).body, '"ＬＥＮＡ"');

    const merged = await cli(t.storeEnv, 'user', 'merge', 'ＬＥＮＡ', 'lena', '--json');
    assert.equal(merged.code, 0, merged.err);
    assert.deepEqual(JSON.parse(merged.out), {
      from: 'ＬＥＮＡ',
      into: 'lena',
      moved: 1,
      raised: 2,
      kept: 1,
      revoked: 1,
    });
    const audit = merged.logs.find((line) => line['audit'] === 'user merge');
    assert.deepEqual(
      {
        from: audit?.['from'],
        into: audit?.['into'],
        memberships: audit?.['memberships'],
        sessionsEnded: audit?.['sessionsEnded'],
      },
      { from: 'ＬＥＮＡ', into: 'lena', memberships: { moved: 1, raised: 2, kept: 1 }, sessionsEnded: 1 },
    );

    assert.deepEqual(await memberships(t.stores, 'lena'), { 1: 2, 2: 1, 3: 0, 4: 2, 5: 1 });
    assert.deepEqual(await memberships(t.stores, 'ＬＥＮＡ'), {});
    assert.equal(await t.stores.users.get('ＬＥＮＡ'), null);
    assert.equal((await t.stores.users.get('lena'))?.active, true);
    assert.equal((await check()).statusCode, 403, 'the running service no longer answers FROM’s session');

    const checked = await cli(t.storeEnv, 'config', 'check', '--json');
    assert.deepEqual(JSON.parse(checked.out).usernames.findings, []);
  });

  test('refusals: no such user (nothing changes), the same user twice, an INTO the profile refuses', async () => {
    const before = JSON.stringify(await t.stores.groups.exportData());
    const missing = await cli(t.storeEnv, 'user', 'merge', 'ＬＥＮＡ', 'lena');
    assert.equal(missing.code, 1);
    assert.match(missing.err, /^clubhouse: no user "ＬＥＮＡ"$/);
    const noInto = await cli(t.storeEnv, 'user', 'merge', 'lena', 'nobody');
    assert.equal(noInto.code, 1);
    assert.match(noInto.err, /^clubhouse: no user "nobody"$/);
    assert.equal(
      (await cli(t.storeEnv, 'user', 'merge', 'lena', 'LENA')).code,
      2,
      'INTO is canonicalised: lena',
    );
    assert.equal((await cli(t.storeEnv, 'user', 'merge', 'lena', 'bad name')).code, 2);
    assert.equal(JSON.stringify(await t.stores.groups.exportData()), before);
    assert.equal((await t.stores.users.get('lena'))?.active, true);
  });
});

describe('the printed merge command', () => {
  test('a shell reads back exactly the stored name, whatever it holds', async () => {
    const names = [
      'ＬＥＮＡ',
      'bad name',
      "o'brien x",
      'tab\there',
      'line\nbreak',
      '-dash',
      '$HOME',
      'a\\b',
      '*',
    ];
    for (const name of names) {
      const command = mergeCommand(name, 'lena');
      assert.ok(command.startsWith('clubhouse user merge '), command);
      // bash, as an administrator's shell would, reads the words after `clubhouse user merge`.
      const words = command.slice('clubhouse user merge '.length);
      const { stdout } = await promisify(execFile)('bash', ['-c', `printf '%s\\0' ${words}`]);
      const read = stdout.split('\0').slice(0, -1);
      assert.deepEqual(read, name.startsWith('-') ? ['--', name, 'lena'] : [name, 'lena'], command);
    }
    assert.equal(mergeCommand('𝐥𝐞𝐧𝐚', null), 'clubhouse user merge 𝐥𝐞𝐧𝐚 USERNAME');
  });
});
