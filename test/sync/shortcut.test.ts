// Contract §11, the group sync's shortcut (groups/sync/shortcut.ts, store/sql/group-sync-mark.ts): a
// run that finds the directory as the last writing run left it, on a store nothing has written
// since, replays that run's outcome instead of reading every synced group and membership. Only
// where the store can say "nothing written since" (SQLite's group generation; PostgreSQL has none
// yet and plans every run). On every store: a replayed run prints exactly what planning in full
// prints, and anything that could change the plan in between (a membership set in clubhouse, a
// changed directory, other options) makes the next run plan in full.
import assert from 'node:assert/strict';
import type { DatabaseSync } from 'node:sqlite';
import { after, before, test } from 'node:test';
import { Attribute, Change } from 'ldapts';
import type pg from 'pg';
import type { Stores } from '../../src/store/types.ts';
import { DIRECTORY_USERS, type Slapd, startSlapd, userDn } from '../helpers/slapd.ts';
import { describeEachStore, type StoreData } from '../helpers/stores.ts';
import {
  asAdministrator,
  CLUBS_DN,
  runSync,
  type SyncRun,
  syncDirectoryLdif,
  syncEnv,
} from '../helpers/sync-directory.ts';

/** Forgets the last writing run's mark, as a store that never had one: the next run plans in full. */
async function forgetMark(stores: Stores): Promise<void> {
  const sql = "DELETE FROM meta WHERE key = 'group_sync_mark'";
  if ('db' in stores) (stores as unknown as { db: DatabaseSync }).db.exec(sql);
  else await (stores as unknown as { pool: pg.Pool }).pool.query(sql);
}

/** Whether the run's logged outcome says it was replayed rather than planned. */
function replayed(run: SyncRun): boolean {
  assert.equal(run.code, 0, run.err.join('\n'));
  const done = run.logs.find((line) => String(line['msg']).startsWith('group sync'));
  const { replayed, phases } = done?.['groupSync'] as {
    replayed: boolean;
    phases: { directory: number; records: number; plan: number; store: number };
  };
  assert.ok(phases.directory > 0 && phases.store > 0, JSON.stringify(phases));
  // A replayed run makes no records and plans nothing; a planned one does both.
  assert.equal(phases.records === 0 && phases.plan === 0, replayed, JSON.stringify(phases));
  return replayed;
}

describeEachStore('the group sync replays a no-change run only when nothing changed', (store) => {
  let slapd: Slapd;
  let made: StoreData;
  let stores: Stores;
  let env: Record<string, string>;
  // SQLite keeps a group generation; PostgreSQL does not (yet): every run there plans in full.
  const replays = store.kind === 'sqlite' || store.kind === 'redis';

  before(async () => {
    slapd = await startSlapd(DIRECTORY_USERS, { tls: false, ldif: syncDirectoryLdif() });
    made = await store.create();
    stores = await made.open();
    env = { ...made.env, ...syncEnv(slapd) };
    // A group created in clubhouse: its name, taken by a directory group, is a skip of the planner's.
    await stores.groups.addGroup({
      id: null,
      name: 'Local Club',
      description: '',
      short_description: '',
      activities: '',
      type: 0,
    });
  });
  after(async () => {
    await stores?.close();
    await made?.drop();
    await slapd?.stop();
  });

  test('after a writing run, an unchanged run is replayed and prints what planning in full prints', async () => {
    const first = await runSync(env);
    assert.equal(replayed(first), false);
    assert.match(first.out[0] ?? '', /^groups: 5 added/);
    const unchanged = await runSync(env);
    assert.equal(replayed(unchanged), replays);
    assert.match(unchanged.out[0] ?? '', /^groups: 0 added, 0 changed, 0 removed, 0 kept; .* skipped: 4$/);
    const dry = await runSync(env, '--dry-run');
    assert.equal(replayed(dry), replays);
    assert.deepEqual(dry.out.slice(1), unchanged.out);
    await forgetMark(stores);
    const planned = await runSync(env);
    assert.equal(replayed(planned), false);
    assert.deepEqual(planned.out, unchanged.out);
    // A run that writes nothing records nothing (contract §11: it writes nothing at all).
    assert.equal(replayed(await runSync(env)), false);
  });

  test('a membership set in clubhouse, a changed directory or other options make the next run plan in full', async () => {
    const chess = (await stores.groups.list()).find((group) => group.name === 'Chess Club');
    assert.ok(chess);
    // A directory change: the run writes, and records. (A DN with escapes: slapd may spell it
    // otherwise than the entry's own, and then it is found as a name, not by its text.)
    const escaped = "d'arcy+o,k";
    await asAdministrator(slapd, async (client) => {
      await client.modify(`cn=Chess Club,${CLUBS_DN}`, [
        new Change({
          operation: 'add',
          modification: new Attribute({
            type: 'member',
            values: [userDn({ username: 'quinn' }), userDn({ username: escaped })],
          }),
        }),
      ]);
    });
    const changed = await runSync(env);
    assert.equal(replayed(changed), false);
    assert.ok(changed.out.includes(`membership added ${chess.id} quinn 1`), changed.out.join('\n'));
    assert.ok(changed.out.includes(`membership added ${chess.id} ${escaped} 1`), changed.out.join('\n'));
    assert.equal(replayed(await runSync(env)), replays);

    // An administrator's change to a synced group: planned in full, and the directory's put back.
    await stores.groups.setMembership({ group: chess.id, username: 'uma', status: 2 });
    const restored = await runSync(env);
    assert.equal(replayed(restored), false);
    assert.ok(restored.out.includes(`membership removed ${chess.id} uma 2`));
    assert.equal(replayed(await runSync(env)), replays);

    // Other options are other inputs.
    assert.equal(replayed(await runSync(env, '--keep-removed')), false);
    assert.equal(replayed(await runSync(env)), replays);
  });
});
