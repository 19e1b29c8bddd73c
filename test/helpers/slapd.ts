// A private OpenLDAP slapd for tests: its own config, certificates, database (loaded from LDIF with
// slapadd) and loopback ports in a temp dir, run in the foreground as a child of the test process,
// so the LDAP backend is tested against a real directory. One ldap:// listener (plain text, offers
// StartTLS) and one ldaps:// listener (implicit TLS).
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureDebianPackage } from './apt.ts';
import { makeTestCertificates } from './certs.ts';
import { removeNow, removeOnExit, spawnManaged } from './child.ts';
import { canConnect, freePorts } from './ports.ts';

const run = promisify(execFile);
const SLAPD_BIN = '/usr/sbin/slapd';
const START_ATTEMPTS = 3;
const START_TIMEOUT_MS = 20_000;

export const LDAP_SUFFIX = 'dc=example,dc=org';
export const PEOPLE_DN = `ou=people,${LDAP_SUFFIX}`;
/** The service account of search-then-bind; it may read people, nobody else may. */
export const SERVICE_DN = `cn=clubhouse,ou=services,${LDAP_SUFFIX}`;
export const SERVICE_PASSWORD = 'service-secret-ü';
/** The directory's administrator (rootdn): tests change the directory as it, over loopback. */
export const ROOT_DN = `cn=admin,${LDAP_SUFFIX}`;
export const ROOT_PASSWORD = 'root-secret';

export interface DirectoryUser {
  readonly username: string;
  readonly password: string;
  /** Where the entry lives; default ou=people. */
  readonly ou?: string;
}

/**
 * People in the test directory: the demo users, awkward passwords (UTF-8, quotes, backslashes,
 * percent signs), a non-ASCII uid, and uids with RFC 4514 specials that only bind when the DN
 * is escaped correctly.
 */
export const DIRECTORY_USERS: readonly DirectoryUser[] = Object.freeze([
  { username: 'alice', password: 'alice-password' },
  { username: 'bob', password: 'bob-password' },
  { username: 'carol', password: 'carol-password' },
  { username: 'uma', password: 'pässwörd-日本語-✓' },
  { username: 'quinn', password: 'a b "c" \'d\' \\e' },
  { username: 'percy', password: '100%$HOME$$' },
  { username: 'jürgen', password: 'jürgen-password' },
  { username: "d'arcy+o,k", password: 'darcy-password' },
  { username: '#hash;semi=eq<gt>', password: 'hash-password' },
  // Two entries that one filter matches: search-then-bind must refuse both.
  { username: 'twin', password: 'twin-password' },
  { username: 'twin', password: 'twin-password', ou: 'ou=alumni,ou=people' },
  // Denied `auth` on its password by the ACL: every bind fails like a wrong password.
  { username: 'disabled', password: 'disabled-password' },
]);

/** Returns the first DIRECTORY_USERS entry for `username`. */
export function directoryUser(username: string): DirectoryUser {
  const user = DIRECTORY_USERS.find((candidate) => candidate.username === username);
  if (!user) throw new Error(`no directory user ${username}`);
  return user;
}

export interface Slapd {
  readonly host: '127.0.0.1';
  /** ldap:// listener: plain text, StartTLS offered. */
  readonly plainPort: number;
  /** ldaps:// listener; 0 without TLS. */
  readonly tlsPort: number;
  /** PEM CA that signed the server certificate (SAN localhost, 127.0.0.1). */
  readonly caFile: string;
  readonly dir: string;
  /** The slapd process (for the benchmark's CPU figures). */
  readonly pid: number;
  stop(): Promise<void>;
}

/** Escapes one RFC 4514 attribute value (the harness's own, independent of the code under test). */
function dnValue(value: string): string {
  return value.replace(/[\\,+"<>;=]/g, (c) => `\\${c}`).replace(/^[#\s]|\s$/g, (c) => `\\${c}`);
}

export function userDn(user: Pick<DirectoryUser, 'username' | 'ou'>): string {
  return `uid=${dnValue(user.username)},${user.ou ?? 'ou=people'},${LDAP_SUFFIX}`;
}

/** An LDIF attribute line; values that are not a SAFE-STRING (RFC 2849 §2) are base64. */
export function attr(name: string, value: string): string {
  const ascii = [...value].every(
    (c) => c.charCodeAt(0) > 0 && c.charCodeAt(0) < 128 && c !== '\n' && c !== '\r',
  );
  const safe = ascii && !/^[ :<]/.test(value) && !value.endsWith(' ');
  return safe ? `${name}: ${value}` : `${name}:: ${Buffer.from(value, 'utf8').toString('base64')}`;
}

export function entry(lines: string[]): string {
  return `${lines.join('\n')}\n\n`;
}

function directoryLdif(users: readonly DirectoryUser[]): string {
  let out = entry([
    `dn: ${LDAP_SUFFIX}`,
    'objectClass: dcObject',
    'objectClass: organization',
    'o: Example',
    'dc: example',
  ]);
  for (const ou of ['people', 'services']) {
    out += entry([`dn: ou=${ou},${LDAP_SUFFIX}`, 'objectClass: organizationalUnit', `ou: ${ou}`]);
  }
  out += entry([`dn: ou=alumni,${PEOPLE_DN}`, 'objectClass: organizationalUnit', 'ou: alumni']);
  out += entry([
    attr('dn', SERVICE_DN),
    'objectClass: organizationalRole',
    'objectClass: simpleSecurityObject',
    'cn: clubhouse',
    attr('userPassword', SERVICE_PASSWORD),
  ]);
  for (const user of users) {
    out += entry([
      attr('dn', userDn(user)),
      'objectClass: inetOrgPerson',
      attr('uid', user.username),
      attr('cn', user.username),
      attr('sn', user.username),
      attr('mail', `${user.username.replace(/[^a-z0-9]/gi, 'x')}@example.org`),
      attr('userPassword', user.password),
    ]);
  }
  return out;
}

function slapdConfig(
  dir: string,
  certs: { caFile: string; certFile: string; keyFile: string },
  tls: boolean,
): string {
  const disabled = userDn(directoryUser('disabled'));
  // Without certificates slapd refuses StartTLS (and has no ldaps:// listener).
  const tlsLines = tls
    ? `TLSCACertificateFile ${certs.caFile}\nTLSCertificateFile ${certs.certFile}\nTLSCertificateKeyFile ${certs.keyFile}`
    : '';
  return `# Generated by test/helpers/slapd.ts
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
# posixGroup and memberUid (RFC 2307), for the group sync's tests.
include /etc/ldap/schema/nis.schema
pidfile ${dir}/slapd.pid
argsfile ${dir}/slapd.args
modulepath /usr/lib/ldap
moduleload back_mdb
${tlsLines}
database mdb
maxsize 1073741824
suffix "${LDAP_SUFFIX}"
rootdn "${ROOT_DN}"
rootpw ${ROOT_PASSWORD}
directory ${dir}/db
index objectClass eq
# The group sync reads every group and user with paged results (RFC 2696): past the default limit of
# 500 entries only for the service account.
limits dn.exact="${SERVICE_DN}" size=unlimited size.pr=unlimited size.prtotal=unlimited time=unlimited
# The root DSE answers anyone (the readiness probe reads it without credentials).
access to dn.base="" by * read
access to dn.exact="${disabled}" attrs=userPassword by * none
access to attrs=userPassword by anonymous auth by * none
# Only the service account may search; anonymous users see nothing (search-then-bind needs it).
access to * by dn.exact="${SERVICE_DN}" read by self read by * none
`;
}

/**
 * Starts a private slapd loaded with `users` and resolves once both listeners accept connections.
 * Call stop() when done; the process is also killed when the test process exits.
 */
export async function startSlapd(
  users: readonly DirectoryUser[] = DIRECTORY_USERS,
  options: {
    readonly tls?: boolean;
    /** More entries (LDIF, e.g. groups made with `entry` and `attr`), loaded after the users. */
    readonly ldif?: string;
  } = {},
): Promise<Slapd> {
  const tls = options.tls ?? true;
  await ensureDebianPackage(SLAPD_BIN, 'slapd');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'clubhouse-slapd-'));
  removeOnExit(dir);
  try {
    const certs = await makeTestCertificates(dir);
    await mkdir(path.join(dir, 'db'));
    const configFile = path.join(dir, 'slapd.conf');
    await writeFile(configFile, slapdConfig(dir, certs, tls));
    const ldifFile = path.join(dir, 'directory.ldif');
    await writeFile(ldifFile, directoryLdif(users) + (options.ldif ?? ''));
    // slapadd loads offline (the `-q` quick mode skips consistency checks the LDIF does not need).
    await run('/usr/sbin/slapadd', ['-q', '-f', configFile, '-l', ldifFile]);
    for (let attempt = 1; ; attempt++) {
      const [plainPort, tlsPort] = (await freePorts(2)) as [number, number];
      const urls = tls
        ? `ldap://127.0.0.1:${plainPort}/ ldaps://127.0.0.1:${tlsPort}/`
        : `ldap://127.0.0.1:${plainPort}/`;
      // -d 0: stay in the foreground (a child of the test), no debug output.
      const server = spawnManaged(SLAPD_BIN, ['-d', '0', '-f', configFile, '-h', urls]);
      const started = Date.now();
      let up = false;
      while (server.running() && Date.now() - started < START_TIMEOUT_MS) {
        if ((await canConnect(plainPort)) && (!tls || (await canConnect(tlsPort)))) {
          up = true;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      if (!up) {
        const output = await server.finalOutput();
        await server.stop('SIGKILL', 0);
        if (attempt < START_ATTEMPTS && /Address already in use|bind/i.test(output)) continue;
        throw new Error(`slapd did not start:\n${output}`);
      }
      let stopped: Promise<void> | undefined;
      return {
        host: '127.0.0.1',
        plainPort,
        tlsPort: tls ? tlsPort : 0,
        caFile: certs.caFile,
        dir,
        pid: server.child.pid ?? 0,
        stop() {
          stopped ??= (async () => {
            await server.stop('SIGTERM', 3000);
            removeNow(dir);
          })();
          return stopped;
        },
      };
    }
  } catch (error) {
    removeNow(dir);
    throw error;
  }
}
