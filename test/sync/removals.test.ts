// GROUP_SYNC_MAX_REMOVALS: one empty directory answer (here a group filter that matches nothing,
// as a typo or an ACL change makes it) must not remove every synced group. On every database store:
// a run that would remove more than the limit writes nothing and exits 1 printing what it would
// have done (a dry run alike); `--keep-removed` and a higher limit let it through; the service's
// interval logs it and raises clubhouse_group_sync_removals_held instead; `--allow-removals` applies
// it. A run within the limit (the default: a tenth of the synced groups, rounded up) is not held.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/logger.ts';
import { startServer } from '../../src/server.ts';
import type { Stores } from '../../src/store/types.ts';
import { lineSink } from '../helpers/app.ts';
import { DIRECTORY_USERS, type Slapd, startSlapd } from '../helpers/slapd.ts';
import { describeEachStore, type StoreData } from '../helpers/stores.ts';
import {
  asAdministrator,
  GROUPS_DN,
  runSync,
  syncDirectoryLdif,
  syncEnv,
} from '../helpers/sync-directory.ts';

/** Every row of groups, memberships and users, as text: what "nothing written" compares. */
async function contents(stores: Stores): Promise<string> {
  return JSON.stringify(await stores.groups.exportData());
}

/** A group filter the directory evaluates to no entry at all: the empty answer. */
const MATCHES_NOTHING = '(cn=no group is called this)';

describe('GROUP_SYNC_MAX_REMOVALS as a setting', () => {
  const env = {
    LDAP_GROUP_BASE_DN: 'ou=groups,dc=example,dc=org',
    LDAP_BIND_DN: 'cn=a',
    LDAP_BIND_PASSWORD: 'b',
  };
  const limit = (value: string | undefined) =>
    loadConfig({
      ...env,
      LDAP_URL: 'ldap://127.0.0.1',
      LDAP_BASE_DN: 'dc=example,dc=org',
      ...(value === undefined ? {} : { GROUP_SYNC_MAX_REMOVALS: value }),
    }).groupSync?.maxRemovals;

  test('a number of groups or a share; 10 % by default; anything else refused naming it', () => {
    assert.deepEqual(limit(undefined), { percent: 10 });
    assert.deepEqual(limit('25'), { groups: 25 });
    assert.deepEqual(limit('0'), { groups: 0 });
    assert.deepEqual(limit('100%'), { percent: 100 });
    for (const bad of ['101%', 'ten', '-1', '5.5', '%'])
      assert.throws(
        () => limit(bad),
        (err: unknown) => err instanceof ConfigError && /GROUP_SYNC_MAX_REMOVALS/.test(err.message),
        bad,
      );
  });
});

describeEachStore('GROUP_SYNC_MAX_REMOVALS holds a run that would remove too many groups', (store) => {
  let slapd: Slapd;
  let made: StoreData;
  let stores: Stores;
  let env: Record<string, string>;

  before(async () => {
    slapd = await startSlapd(DIRECTORY_USERS, { tls: false, ldif: syncDirectoryLdif() });
    made = await store.create();
    stores = await made.open();
    env = { ...made.env, ...syncEnv(slapd) };
    const first = await runSync(env);
    assert.equal(first.code, 0, first.err.join('\n'));
    assert.match(first.out[0] ?? '', /^groups: 6 added/);
  });
  after(async () => {
    await stores?.close();
    await made?.drop();
    await slapd?.stop();
  });

  test('within the default limit (1 of 6 synced groups), a removal goes through', async () => {
    await asAdministrator(slapd, (client) => client.del(`cn=Leaving,${GROUPS_DN}`));
    const run = await runSync(env);
    assert.equal(run.code, 0, run.err.join('\n'));
    assert.match(run.out[0] ?? '', /^groups: 0 added, 0 changed, 1 removed/);
  });

  test('an empty directory answer is held: exit 1, nothing written, what it would remove printed (a dry run alike)', async () => {
    const before = await contents(stores);
    const empty = { ...env, LDAP_GROUP_FILTER: MATCHES_NOTHING };
    for (const args of [[], ['--dry-run']]) {
      const run = await runSync(empty, ...args);
      assert.equal(run.code, 1, run.out.join('\n'));
      assert.equal(run.out[0], 'held: nothing written');
      assert.match(run.out[1] ?? '', /^groups: 0 added, 0 changed, 5 removed/);
      assert.equal(run.out.filter((line) => line.startsWith('group removed ')).length, 5);
      assert.match(
        run.err.join('\n'),
        /sync groups held: this run would remove 5 of the 5 synced groups, more than GROUP_SYNC_MAX_REMOVALS \(10%: 1\) allows; nothing written\. If the directory is right, run clubhouse sync groups --allow-removals/,
      );
      const logged = run.logs.find((line) => String(line['msg']).startsWith('group sync held'));
      assert.equal(logged?.['level'], 50);
      assert.equal(await contents(stores), before);
    }
    // --keep-removed removes nothing, so nothing is held; a higher limit lets the removals through.
    const kept = await runSync(empty, '--keep-removed', '--dry-run');
    assert.equal(kept.code, 0, kept.err.join('\n'));
    assert.match(kept.out[1] ?? '', /0 removed, 5 kept/);
    const allowed = await runSync({ ...empty, GROUP_SYNC_MAX_REMOVALS: '5' }, '--dry-run');
    assert.equal(allowed.code, 0, allowed.err.join('\n'));
    const share = await runSync({ ...empty, GROUP_SYNC_MAX_REMOVALS: '80%' }, '--dry-run');
    assert.equal(share.code, 1, '80 % of 5 is 4: five removals are held');
    assert.equal(await contents(stores), before);
  });

  test('the service’s interval logs the held run and raises clubhouse_group_sync_removals_held, writing nothing', async () => {
    const before = await contents(stores);
    const lines: Record<string, unknown>[] = [];
    const sink = lineSink(lines, (line) => JSON.parse(line) as Record<string, unknown>);
    const config = loadConfig({
      ...env,
      LDAP_GROUP_FILTER: MATCHES_NOTHING,
      PORT: '0',
      IMAP_HOST: '127.0.0.1',
      IMAP_SECURITY: 'plain',
      GROUP_SYNC_INTERVAL: '1h',
    });
    const server = await startServer(config, createLogger('info', sink));
    try {
      const held = () => lines.find((line) => String(line['msg']).startsWith('group sync held'));
      for (let waited = 0; held() === undefined && waited < 30_000; waited += 50) await sleep(50);
      const line = held();
      assert.ok(line, 'the interval run logged the held run');
      assert.equal(line['level'], 50);
      assert.equal((line['groupSync'] as { groupsRemoved: number }).groupsRemoved, 5);
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      assert.match(metrics, /^clubhouse_group_sync_removals_held 5$/m);
      assert.match(metrics, /^clubhouse_group_sync_runs_total\{outcome="held"\} 1$/m);
      assert.equal(await contents(stores), before);
    } finally {
      await server.close();
    }
  });

  test('--allow-removals applies the run the operator checked', async () => {
    const run = await runSync({ ...env, LDAP_GROUP_FILTER: MATCHES_NOTHING }, '--allow-removals');
    assert.equal(run.code, 0, run.err.join('\n'));
    assert.match(run.out[0] ?? '', /^groups: 0 added, 0 changed, 5 removed/);
    assert.deepEqual(await stores.groups.list(), []);
  });
});
