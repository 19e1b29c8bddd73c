// Contract §11: a group new to clubhouse takes a free id, the lowest unused one above every id in
// use or, once 2^31−1 is taken, the lowest unused one anywhere; only a table without a free id
// fails the run (exit 1, nothing written). One rule for every writer that picks an id
// (store/group-ids.ts): the sync and `clubhouse group add`. On every database store, from an import
// file holding group 2147483647, then a full table (every id in use, as the planner reads it) that
// fails the run through the real directory and the real transaction.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { groupDirectory } from '../../src/backends/ldap/groups/reader.ts';
import { runCli } from '../../src/cli/main.ts';
import { loadConfig } from '../../src/config/config.ts';
import { runGroupSync } from '../../src/groups/sync/run.ts';
import { freeGroupIds } from '../../src/store/group-ids.ts';
import type { GroupSyncStore } from '../../src/store/group-sync-types.ts';
import { MAX_GROUP_ID } from '../../src/store/limits.ts';
import type { Stores } from '../../src/store/types.ts';
import { DIRECTORY_USERS, type Slapd, startSlapd } from '../helpers/slapd.ts';
import { describeEachStore, type StoreData } from '../helpers/stores.ts';
import { runSync, syncDirectoryLdif, syncEnv } from '../helpers/sync-directory.ts';

/** Ids 1 … `length` in use except `missing`, ascending, without holding 2^31 numbers. */
function idsInUse(length: number, missing: number | null = null): readonly number[] {
  const at = (i: number) => (missing === null || i + 1 < missing ? i + 1 : i + 2);
  return new Proxy([] as number[], {
    get(target, key, receiver) {
      if (key === 'length') return length;
      if (typeof key === 'string' && /^[0-9]+$/.test(key)) {
        const i = Number(key);
        return i < length ? at(i) : undefined;
      }
      return Reflect.get(target, key, receiver);
    },
  });
}

describe('the free group id rule', () => {
  test('above every id in use, then, with the top taken, the lowest unused ids anywhere', () => {
    assert.deepEqual(freeGroupIds([], 3), [1, 2, 3]);
    assert.deepEqual(freeGroupIds([1, 2, 5], 2), [6, 7]);
    assert.deepEqual(freeGroupIds([MAX_GROUP_ID], 3), [1, 2, 3]);
    assert.deepEqual(freeGroupIds([1, 2, 5, 9, MAX_GROUP_ID], 5), [3, 4, 6, 7, 8]);
    // The last ids of the range first, then the gaps from the bottom.
    assert.deepEqual(freeGroupIds([4, MAX_GROUP_ID - 2], 5), [MAX_GROUP_ID - 1, MAX_GROUP_ID, 1, 2, 3]);
    assert.deepEqual(freeGroupIds([1, 2], 0), []);
  });

  test('only a table without enough free ids has none to give', () => {
    assert.equal(freeGroupIds(idsInUse(MAX_GROUP_ID), 1), null);
    const oneGap = idsInUse(MAX_GROUP_ID - 1, 1_000_000);
    assert.equal(oneGap[MAX_GROUP_ID - 2], MAX_GROUP_ID);
    assert.deepEqual(freeGroupIds(oneGap, 1), [1_000_000]);
    assert.equal(freeGroupIds(oneGap, 2), null);
  });
});

describeEachStore('new groups take free ids, with group 2147483647 in use', (store) => {
  let slapd: Slapd;
  let made: StoreData;
  let stores: Stores;
  let env: Record<string, string>;
  let dir: string;

  const cli = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli([...argv, '--json'], env, {
      out: (text) => out.push(text),
      err: (text) => err.push(text),
      log: () => undefined,
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  before(async () => {
    slapd = await startSlapd(DIRECTORY_USERS, { tls: false, ldif: syncDirectoryLdif() });
    made = await store.create();
    stores = await made.open();
    env = { ...made.env, ...syncEnv(slapd) };
    dir = await mkdtemp(path.join(tmpdir(), 'clubhouse-ids-'));
  });
  after(async () => {
    await stores?.close();
    await made?.drop();
    await slapd?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('a sync adds every new directory group after an import used the top id, and group add takes the next free id', async () => {
    const fixture = path.join(dir, 'import.json');
    const group = (id: number, name: string) => ({
      id,
      name,
      description: '',
      short_description: '',
      activities: '',
      type: 0,
    });
    await writeFile(
      fixture,
      JSON.stringify({
        groups: [group(1, 'First'), group(MAX_GROUP_ID, 'Top of the range')],
        users: [],
        memberships: [],
      }),
    );
    const imported = await cli('import', fixture);
    assert.equal(imported.code, 0, imported.err);

    const run = await runSync(env);
    assert.equal(run.code, 0, run.err.join('\n'));
    assert.match(run.out[0] ?? '', /^groups: 6 added, 0 changed, 0 removed/);
    assert.ok(!run.out.some((line) => /free group id/.test(line)), run.out.join('\n'));
    const ids = (await stores.groups.list()).map((g) => g.id);
    assert.deepEqual(ids, [1, 2, 3, 4, 5, 6, 7, MAX_GROUP_ID]);

    const added = await cli('group', 'add', '--name', 'Added by hand');
    assert.equal(added.code, 0, added.err);
    assert.equal((JSON.parse(added.out) as { id: number }).id, 8);
  });

  test('a run that finds every id in use fails, writes nothing, and says why', async () => {
    // The synced groups removed by hand: the directory's groups are new again.
    for (const group of await stores.groups.list())
      if (![1, 8, MAX_GROUP_ID].includes(group.id)) await stores.groups.removeGroup(group.id);
    const before = await stores.groups.exportData();
    const config = loadConfig(env);
    assert.ok(config.groupSync);
    // The real transaction, whose planner is told every id is in use (a table no test can fill).
    const real = stores.groupSync;
    const full: GroupSyncStore = {
      ...real,
      apply: (usernames, plan, options) =>
        real.apply(usernames, (state) => plan({ ...state, ids: idsInUse(MAX_GROUP_ID) }), options),
    };
    const outcome = await runGroupSync(
      {
        directory: groupDirectory(config.groupSync.directory),
        store: full,
        usernameCase: config.usernameCase,
      },
      { dryRun: false, keepRemoved: false, maxRemovals: config.groupSync.maxRemovals, allowRemovals: false },
    );
    assert.equal(outcome.ok, false);
    assert.equal(!outcome.ok && outcome.stage, 'ids');
    assert.match(
      !outcome.ok ? outcome.reason : '',
      /^no free group id for 6 new groups: 2147483647 of the 2147483647 ids are in use; nothing written$/,
    );
    assert.deepEqual(await stores.groups.exportData(), before);
  });
});
