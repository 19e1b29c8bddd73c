// Contract §8 and §11: a username must name exactly one entry under the user base. A login in
// search-then-bind mode refuses a name that several entries answer to; the group sync must too, or
// a second entry with `uid: ALICE` in another OU would make the real alice a member, and an
// administrator, of the groups that name that entry. Against a real slapd holding both entries
// (and the harness's two `twin` entries): every reference to the name, by member or owner DN or by
// memberUid, is skipped and reported, on every database store; a login as alice is refused by the
// same directory; and a directory of posixGroups alone (names by memberUid only) is checked too.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ldapLoginOnce } from '../../src/backends/ldap/authenticator.ts';
import type { LdapSettings } from '../../src/backends/ldap/settings.ts';
import { backendTls } from '../../src/backends/tls.ts';
import type { Stores } from '../../src/store/types.ts';
import {
  attr,
  DIRECTORY_USERS,
  type DirectoryUser,
  entry,
  PEOPLE_DN,
  SERVICE_DN,
  SERVICE_PASSWORD,
  type Slapd,
  startSlapd,
  userDn,
} from '../helpers/slapd.ts';
import { describeEachStore, type StoreData } from '../helpers/stores.ts';
import {
  CLASSES_DN,
  CLUBS_DN,
  GROUPS_DN,
  runSync,
  syncDirectoryLdif,
  syncEnv,
} from '../helpers/sync-directory.ts';

/** A second entry answering to alice: another OU under the same user base, the uid in capitals. */
const IMPOSTOR: DirectoryUser = {
  username: 'ALICE',
  password: 'impostor-password',
  ou: 'ou=alumni,ou=people',
};

/** Groups that name the impostor by DN, and the twins (two entries, one uid) by memberUid. */
function moreGroups(): string {
  return (
    entry([
      attr('dn', `cn=Alumni Board,${GROUPS_DN}`),
      'objectClass: groupOfNames',
      'cn: Alumni Board',
      attr('member', userDn({ username: 'bob' })),
      attr('owner', userDn(IMPOSTOR)),
    ]) +
    entry([
      attr('dn', `cn=Twins,${GROUPS_DN}`),
      'objectClass: posixGroup',
      'cn: Twins',
      'gidNumber: 5001',
      'memberUid: twin',
      'memberUid: carol',
    ])
  );
}

/** The memberships of the group named `name`, as `username:status`, sorted. */
async function membersOf(stores: Stores, name: string): Promise<string[]> {
  const { groups, memberships } = await stores.groups.exportData();
  const group = groups.find((g) => g.name === name);
  assert.ok(group, `no group ${name}`);
  return memberships
    .filter((m) => m.group === group.id)
    .map((m) => `${m.username}:${m.status}`)
    .sort();
}

describeEachStore('the group sync skips a username several directory entries answer to', (store) => {
  let slapd: Slapd;
  let made: StoreData;
  let stores: Stores;
  let env: Record<string, string>;

  before(async () => {
    slapd = await startSlapd([...DIRECTORY_USERS, IMPOSTOR], {
      tls: false,
      ldif: syncDirectoryLdif() + moreGroups(),
    });
    made = await store.create();
    stores = await made.open();
    env = { ...made.env, ...syncEnv(slapd) };
  });
  after(async () => {
    await stores?.close();
    await made?.drop();
    await slapd?.stop();
  });

  test('every reference to alice, by DN and by memberUid, is skipped and reported; nobody else is', async () => {
    const run = await runSync(env);
    assert.equal(run.code, 0, run.err.join('\n'));
    const why =
      'entries under the user base (LDAP_BASE_DN) answer to this username: a login refuses it, and so does the sync';
    const ambiguous = run.out.filter((line) => line.includes('answer to this username')).sort();
    assert.deepEqual(ambiguous, [
      `skipped cn=Alumni Board,${GROUPS_DN} "ALICE": 2 ${why}`,
      `skipped cn=Biologie 2B – Zellen,${CLASSES_DN} "alice": 2 ${why}`,
      `skipped cn=Chess Club,${CLUBS_DN} "alice": 2 ${why}`,
      `skipped cn=Twins,${GROUPS_DN} "twin": 2 ${why}`,
      `skipped cn=staff,${GROUPS_DN} "alice": 2 ${why}`,
    ]);
    // The impostor's entry gives alice nothing: not the Alumni Board's administration.
    assert.deepEqual(await membersOf(stores, 'Alumni Board'), ['bob:1']);
    assert.deepEqual(await membersOf(stores, 'Chess Club'), ['bob:1', 'carol:2']);
    assert.deepEqual(await membersOf(stores, 'Biologie 2B – Zellen'), ['jürgen:1', 'uma:1']);
    assert.deepEqual(await membersOf(stores, 'staff'), ['bob:1', 'carol:1']);
    assert.deepEqual(await membersOf(stores, 'Twins'), ['carol:1']);
    assert.equal(
      await stores.users.get('alice'),
      null,
      'alice is not created for memberships she may not have',
    );
  });

  test('a directory of posixGroups alone (memberUid only) is checked against the user base too', async () => {
    const run = await runSync(
      { ...env, LDAP_GROUP_FILTER: '(objectClass=posixGroup)' },
      '--dry-run',
      '--keep-removed',
    );
    assert.equal(run.code, 0, run.err.join('\n'));
    const ambiguous = run.out.filter((line) => line.includes('answer to this username')).sort();
    assert.deepEqual(ambiguous, [
      `skipped cn=Twins,${GROUPS_DN} "twin": 2 entries under the user base (LDAP_BASE_DN) answer to this username: a login refuses it, and so does the sync`,
      `skipped cn=staff,${GROUPS_DN} "alice": 2 entries under the user base (LDAP_BASE_DN) answer to this username: a login refuses it, and so does the sync`,
    ]);
  });

  test('the same directory refuses a login as alice in search-then-bind mode (the rule the sync follows)', async () => {
    const settings: LdapSettings = {
      url: `ldap://127.0.0.1:${slapd.plainPort}`,
      security: 'plain',
      allowPlaintext: false,
      caFile: null,
      userDn: null,
      bindDn: SERVICE_DN,
      bindPassword: SERVICE_PASSWORD,
      baseDn: PEOPLE_DN,
      userFilter: '(uid={username})',
      timeoutMs: 5000,
      maxConcurrency: 1,
      queueLimit: 1,
    };
    const result = await ldapLoginOnce(settings, backendTls('127.0.0.1', null), 'alice', 'alice-password');
    assert.deepEqual(result, { ok: false, failure: 'bad_credentials', reason: 'several entries match' });
  });
});
