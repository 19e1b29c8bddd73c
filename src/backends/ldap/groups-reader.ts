// Reads the directory's groups for the group sync (contract §11), as plain records: through the same
// guarded connection as a login (connection.ts: our TLS or StartTLS, the frame guard under ldapts,
// one deadline), bound as the service account (§8), with paged searches only (RFC 2696), and never
// writing. What clubhouse makes of the records (usernames canonicalised, the plan, the transaction)
// is the domain's (groups/sync.ts); a value that cannot be read back to a username is skipped here
// and reported, never a crash.
//
// Member DNs (member, uniqueMember, owner) are resolved by one paged search of the user base
// (LDAP_BASE_DN) for every entry with the username attribute, answered into a map by DN as dn.ts
// compares names: one round trip per page of users, where one search per member DN would be 100 000
// round trips for 100 000 memberships. A DN outside the user base, or not found there, is skipped.
import type { Client, Entry } from 'ldapts';
import type { LoginFailure } from '../authenticator.ts';
import { backendTls } from '../tls.ts';
import { bindServiceAccount, type LdapSettings } from './authenticator.ts';
import { withLdapConnection } from './connection.ts';
import { dnKey, isUnderBase, parseDn } from './dn.ts';
import { outOfProtocol } from './errors.ts';

/** How the sync finds and reads the groups (contract §11), besides the directory and its account. */
export interface GroupDirectorySettings {
  /** The directory, TLS and the service account (§8); `baseDn` is the user base member DNs are under. */
  readonly ldap: Pick<LdapSettings, 'url' | 'security' | 'caFile' | 'bindDn' | 'bindPassword' | 'baseDn'>;
  readonly groupBaseDn: string;
  readonly groupFilter: string;
  /** Entries matching both filters are classrooms (type 1); null: none is. */
  readonly classroomFilter: string | null;
  readonly usernameAttribute: string;
  /** The directory's identity of an entry: `entryUUID` (operational, asked for by name) or `objectGUID`. */
  readonly idAttribute: string;
  readonly shortDescriptionAttribute: string | null;
  readonly activitiesAttribute: string | null;
  /** One deadline over the whole read: connect, TLS, bind and every page. */
  readonly timeoutMs: number;
  readonly pageSize: number;
}

/** One group entry as the directory has it. */
export interface DirectoryGroupRecord {
  /** The id attribute's value (objectGUID as its usual text form), lower case. */
  readonly externalId: string;
  readonly dn: string;
  /** `cn`'s first value; '' when absent. */
  readonly name: string;
  readonly description: string;
  readonly shortDescription: string;
  readonly activities: string;
  readonly classroom: boolean;
  /** Usernames as the directory spells them: member DNs read back, and memberUid values. */
  readonly members: readonly string[];
  /** Usernames of the owner DNs (administrators). */
  readonly owners: readonly string[];
}

/** A value the read could not use: the entry, the value, and why. */
export interface DirectorySkip {
  readonly entry: string;
  readonly value: string | null;
  readonly reason: string;
}

type DirectoryRead =
  | {
      readonly ok: true;
      readonly groups: readonly DirectoryGroupRecord[];
      readonly skipped: readonly DirectorySkip[];
      /** Entries read: groups, the classroom search's, and user entries (for the bench's figures). */
      readonly entries: number;
    }
  | { readonly ok: false; readonly failure: LoginFailure; readonly reason: string };

/** A group entry's answer can hold thousands of member DNs: far more than a login's answers. */
const MAX_GROUP_MESSAGE_BYTES = 16 * 1024 * 1024;

/** Attribute values by lower-case type: ldapts keys them as the server spelled the type. */
function attributes(entry: Entry): Map<string, (string | Buffer)[]> {
  const out = new Map<string, (string | Buffer)[]>();
  for (const [type, value] of Object.entries(entry)) {
    if (type === 'dn') continue;
    out.set(type.toLowerCase(), Array.isArray(value) ? value : [value]);
  }
  return out;
}

const text = (value: string | Buffer | undefined): string =>
  value === undefined ? '' : typeof value === 'string' ? value : value.toString('utf8');

/** Active Directory's objectGUID: 16 bytes, the first three fields little-endian in its text form. */
function guidText(bytes: Buffer): string | null {
  if (bytes.length !== 16) return null;
  const hex = (from: number, to: number, reverse: boolean) => {
    const part = Buffer.from(bytes.subarray(from, to));
    return (reverse ? part.reverse() : part).toString('hex');
  };
  return [hex(0, 4, true), hex(4, 6, true), hex(6, 8, true), hex(8, 10, false), hex(10, 16, false)].join('-');
}

/** The entry's identity as text, or null when it has none we can read. */
function externalIdOf(values: (string | Buffer)[] | undefined, binary: boolean): string | null {
  const value = values?.[0];
  if (value === undefined) return null;
  if (binary) return Buffer.isBuffer(value) ? guidText(value) : null;
  const id = text(value).trim().toLowerCase();
  return id === '' ? null : id;
}

/** RFC 4517 §3.3.21: uniqueMember is a DN with an optional `#'0101'B` unique identifier. */
const stripUid = (value: string) => value.replace(/#'[01]*'B$/, '');

/** Every entry of a paged search (RFC 2696), page by page; references are not followed. */
async function* pagedEntries(
  client: Client,
  base: string,
  filter: string,
  attributesAsked: string[],
  settings: GroupDirectorySettings,
  binary: readonly string[] = [],
): AsyncGenerator<Entry> {
  const pages = client.searchPaginated(base, {
    scope: 'sub',
    filter,
    attributes: attributesAsked,
    explicitBufferAttributes: [...binary],
    paged: { pageSize: settings.pageSize },
  });
  for await (const page of pages) yield* page.searchEntries;
}

/** Fails the read when the directory answers an entry outside the base it was asked about. */
function underBase(dn: string, base: ReturnType<typeof parseDn>, what: string) {
  const parsed = parseDn(dn);
  if (parsed === null) throw outOfProtocol(`an entry's DN does not parse: ${dn}`);
  if (base === null || !isUnderBase(parsed, base)) throw outOfProtocol(`an entry outside ${what}: ${dn}`);
  return parsed;
}

/** The read itself, on a bound connection. */
async function readGroups(client: Client, settings: GroupDirectorySettings): Promise<DirectoryRead> {
  await bindServiceAccount(client, settings.ldap);
  const groupBase = parseDn(settings.groupBaseDn);
  const userBase = parseDn(settings.ldap.baseDn ?? '');
  if (groupBase === null) throw outOfProtocol('LDAP_GROUP_BASE_DN is not a DN');
  if (userBase === null) throw outOfProtocol('LDAP_BASE_DN is not a DN');
  const idType = settings.idAttribute.toLowerCase();
  const binaryId = idType === 'objectguid';
  const binary = binaryId ? [settings.idAttribute] : [];
  const usernameType = settings.usernameAttribute.toLowerCase();
  const named = (name: string | null) => (name === null ? null : name.toLowerCase());
  const shortType = named(settings.shortDescriptionAttribute);
  const activitiesType = named(settings.activitiesAttribute);
  const skipped: DirectorySkip[] = [];
  let entries = 0;

  interface Raw {
    readonly externalId: string;
    readonly dn: string;
    readonly values: Map<string, (string | Buffer)[]>;
  }
  const raws: Raw[] = [];
  const asked = ['cn', 'description', settings.idAttribute, 'member', 'uniqueMember', 'memberUid', 'owner'];
  if (settings.shortDescriptionAttribute !== null) asked.push(settings.shortDescriptionAttribute);
  if (settings.activitiesAttribute !== null) asked.push(settings.activitiesAttribute);
  for await (const entry of pagedEntries(
    client,
    settings.groupBaseDn,
    settings.groupFilter,
    asked,
    settings,
    binary,
  )) {
    entries++;
    underBase(entry.dn, groupBase, 'LDAP_GROUP_BASE_DN');
    const values = attributes(entry);
    const externalId = externalIdOf(values.get(idType), binaryId);
    if (externalId === null) {
      skipped.push({ entry: entry.dn, value: null, reason: `no readable ${settings.idAttribute}` });
      continue;
    }
    // Active Directory hands out at most 1500 values of a big group's member at once (range
    // retrieval): a partial list would remove the others, so the group is left as it is.
    if ([...values.keys()].some((type) => /^(member|uniquemember);range=/.test(type))) {
      skipped.push({
        entry: entry.dn,
        value: null,
        reason: 'its member list comes in ranges (more values than the directory returns at once)',
      });
      continue;
    }
    raws.push({ externalId, dn: entry.dn, values });
  }

  // contract §11: classrooms are the entries matching both filters, evaluated by the directory.
  const classrooms = new Set<string>();
  if (settings.classroomFilter !== null) {
    for await (const entry of pagedEntries(
      client,
      settings.groupBaseDn,
      `(&${settings.groupFilter}${settings.classroomFilter})`,
      [settings.idAttribute],
      settings,
      binary,
    )) {
      entries++;
      underBase(entry.dn, groupBase, 'LDAP_GROUP_BASE_DN');
      const id = externalIdOf(attributes(entry).get(idType), binaryId);
      if (id !== null) classrooms.add(id);
    }
  }

  // Every DN a group names, resolved at once by reading the user base (see the header). A DN is
  // parsed once however many groups name it (100 000 memberships are a few thousand people): its
  // key under the user base, or why it has none.
  const dnLookups = new Map<string, { readonly key: string } | { readonly skip: string }>();
  const lookup = (dn: string) => {
    let found = dnLookups.get(dn);
    if (found === undefined) {
      const parsed = parseDn(dn);
      if (parsed === null) found = { skip: 'not a DN' };
      else if (!isUnderBase(parsed, userBase)) found = { skip: 'outside the user base (LDAP_BASE_DN)' };
      else found = { key: dnKey(parsed) };
      dnLookups.set(dn, found);
    }
    return found;
  };
  const wanted = new Map<string, string | null>();
  const dnValues = (values: Map<string, (string | Buffer)[]>, types: string[]) =>
    types.flatMap((type) => (values.get(type) ?? []).map((value) => stripUid(text(value))));
  for (const raw of raws) {
    for (const dn of dnValues(raw.values, ['member', 'uniquemember', 'owner'])) {
      const found = lookup(dn);
      if ('key' in found) wanted.set(found.key, null);
    }
  }
  if (wanted.size > 0) {
    for await (const entry of pagedEntries(
      client,
      settings.ldap.baseDn ?? '',
      `(${settings.usernameAttribute}=*)`,
      [settings.usernameAttribute],
      settings,
    )) {
      entries++;
      const key = dnKey(underBase(entry.dn, userBase, 'LDAP_BASE_DN'));
      if (!wanted.has(key)) continue;
      const username = text(attributes(entry).get(usernameType)?.[0]);
      if (username !== '') wanted.set(key, username);
    }
  }
  const resolve = (groupDn: string, dn: string): string | null => {
    const found = lookup(dn);
    if ('skip' in found) {
      skipped.push({ entry: groupDn, value: dn, reason: found.skip });
      return null;
    }
    const username = wanted.get(found.key) ?? null;
    if (username === null)
      skipped.push({
        entry: groupDn,
        value: dn,
        reason: `no entry with ${settings.usernameAttribute} under the user base`,
      });
    return username;
  };

  const groups = raws.map(({ externalId, dn, values }): DirectoryGroupRecord => {
    const first = (type: string | null) => (type === null ? '' : text(values.get(type)?.[0]));
    const members: string[] = [];
    for (const value of dnValues(values, ['member', 'uniquemember'])) {
      const username = resolve(dn, value);
      if (username !== null) members.push(username);
    }
    for (const value of values.get('memberuid') ?? []) members.push(text(value));
    const owners: string[] = [];
    for (const value of dnValues(values, ['owner'])) {
      const username = resolve(dn, value);
      if (username !== null) owners.push(username);
    }
    return {
      externalId,
      dn,
      name: first('cn'),
      description: first('description'),
      shortDescription: first(shortType),
      activities: first(activitiesType),
      classroom: classrooms.has(externalId),
      members,
      owners,
    };
  });
  return { ok: true, groups, skipped, entries };
}

/** The directory's groups, read on demand (the TLS options built once). */
export interface GroupDirectory {
  /**
   * Reads every group under the group base that matches the filter, with its members and owners as
   * usernames, in one connection within one deadline; a failure anywhere is the whole read's.
   */
  read(): Promise<DirectoryRead>;
}

export function groupDirectory(settings: GroupDirectorySettings): GroupDirectory {
  const tls = backendTls(new URL(settings.ldap.url).hostname, settings.ldap.caFile);
  const endpoint = {
    url: settings.ldap.url,
    security: settings.ldap.security,
    timeoutMs: settings.timeoutMs,
    maxMessageBytes: MAX_GROUP_MESSAGE_BYTES,
  };
  return {
    read: () =>
      withLdapConnection<DirectoryRead>(
        endpoint,
        tls,
        (client) => readGroups(client, settings),
        (failure, reason) => ({ ok: false, failure, reason }),
      ),
  };
}
