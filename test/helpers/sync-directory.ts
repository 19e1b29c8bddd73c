// The group sync's test directory (contract §11): group entries for the harness slapd (slapd.ts) in
// nested OUs, of each of the three object classes, with members as DNs and as memberUid, owners,
// a member DN that does not exist and one outside the user base, non-ASCII names; the settings that
// point the sync at it; a way to run `clubhouse sync groups` in-process and to change the directory
// as its administrator between runs.
import { Client } from 'ldapts';
import { runCli } from '../../src/cli/main.ts';
import {
  attr,
  entry,
  LDAP_SUFFIX,
  PEOPLE_DN,
  ROOT_DN,
  ROOT_PASSWORD,
  SERVICE_DN,
  SERVICE_PASSWORD,
  type Slapd,
  userDn,
} from './slapd.ts';

export const GROUPS_DN = `ou=groups,${LDAP_SUFFIX}`;
export const CLUBS_DN = `ou=clubs,${GROUPS_DN}`;
export const CLASSES_DN = `ou=biology,ou=year1,${GROUPS_DN}`;

const person = (username: string) => userDn({ username });

/** A groupOfNames (or groupOfUniqueNames) entry's LDIF. */
function namesGroup(
  dn: string,
  cn: string,
  members: readonly string[],
  extra: readonly string[] = [],
  unique = false,
): string {
  const memberType = unique ? 'uniqueMember' : 'member';
  return entry([
    attr('dn', dn),
    `objectClass: ${unique ? 'groupOfUniqueNames' : 'groupOfNames'}`,
    attr('cn', cn),
    ...members.map((m) => attr(memberType, m)),
    ...extra,
  ]);
}

/** The directory of the sync suite, loaded by slapadd after the harness's users. */
export function syncDirectoryLdif(): string {
  let out = '';
  for (const dn of [GROUPS_DN, CLUBS_DN, `ou=year1,${GROUPS_DN}`, CLASSES_DN]) {
    const ou = /^ou=([^,]+)/.exec(dn)?.[1] ?? '';
    out += entry([`dn: ${dn}`, 'objectClass: organizationalUnit', `ou: ${ou}`]);
  }
  out += namesGroup(
    `cn=Chess Club,${CLUBS_DN}`,
    'Chess Club',
    [
      person('alice'),
      person('bob'),
      // Skipped and reported: no such entry, and an entry outside the user base.
      `uid=ghost,${PEOPLE_DN}`,
      SERVICE_DN,
    ],
    [attr('owner', person('carol')), attr('description', 'Games on Tuesdays.'), attr('o', 'Moves')],
  );
  // Non-ASCII names, uniqueMember (one with its optional unique identifier), a classroom by filter.
  out += namesGroup(
    `cn=Biologie 2B – Zellen,${CLASSES_DN}`,
    'Biologie 2B – Zellen',
    [`${person('jürgen')}#'0101'B`, person('uma')],
    [
      attr('owner', person('alice')),
      attr('ou', 'classroom'),
      attr('description', 'Zellbiologie für Anfänger'),
    ],
    true,
  );
  // posixGroup: members by memberUid, a fullwidth spelling (canonical: bob) and a refused username.
  out += entry([
    `dn: cn=staff,${GROUPS_DN}`,
    'objectClass: posixGroup',
    'cn: staff',
    'gidNumber: 5000',
    'memberUid: alice',
    'memberUid: carol',
    attr('memberUid', 'ＢＯＢ'),
    'memberUid: bad name',
  ]);
  out += namesGroup(`cn=Leaving,${GROUPS_DN}`, 'Leaving', [person('bob')]);
  // The name of a group created in clubhouse: skipped and reported, the local group untouched.
  out += namesGroup(`cn=Local Club,${GROUPS_DN}`, 'Local Club', [person('bob')]);
  out += namesGroup(`cn=Drama,${GROUPS_DN}`, 'Drama', [person('carol')]);
  return out;
}

/** The settings that point the sync at `slapd` over plain LDAP on loopback (or at a relay's `port`). */
export function syncEnv(slapd: Slapd, port = slapd.plainPort): Record<string, string> {
  return {
    LDAP_URL: `ldap://127.0.0.1:${port}`,
    LDAP_SECURITY: 'plain',
    LDAP_BIND_DN: SERVICE_DN,
    LDAP_BIND_PASSWORD: SERVICE_PASSWORD,
    LDAP_BASE_DN: PEOPLE_DN,
    LDAP_GROUP_BASE_DN: GROUPS_DN,
    LDAP_GROUP_CLASSROOM_FILTER: '(ou=classroom)',
    LDAP_GROUP_SHORT_DESCRIPTION_ATTRIBUTE: 'o',
    // Two entries a page: every search of the suite takes several pages (RFC 2696).
    GROUP_SYNC_PAGE_SIZE: '2',
    GROUP_SYNC_TIMEOUT_MS: '10000',
  };
}

export interface SyncRun {
  readonly code: number;
  readonly out: string[];
  readonly err: string[];
  /** The JSON log lines, parsed. */
  readonly logs: Record<string, unknown>[];
}

/** `clubhouse sync groups ARGS` in-process with `env`. */
export async function runSync(env: Record<string, string>, ...args: string[]): Promise<SyncRun> {
  const out: string[] = [];
  const err: string[] = [];
  const logs: Record<string, unknown>[] = [];
  const code = await runCli(['sync', 'groups', ...args], env, {
    out: (text) => out.push(...text.split('\n')),
    err: (text) => err.push(text),
    log: (line) => logs.push(JSON.parse(line) as Record<string, unknown>),
  });
  return { code, out, err, logs };
}

/** Runs `work` bound as the directory's administrator (the test's hand on the directory). */
export async function asAdministrator(slapd: Slapd, work: (client: Client) => Promise<void>): Promise<void> {
  const client = new Client({ url: `ldap://127.0.0.1:${slapd.plainPort}` });
  try {
    await client.bind(ROOT_DN, ROOT_PASSWORD);
    await work(client);
  } finally {
    await client.unbind();
  }
}
