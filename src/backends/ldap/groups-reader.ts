// Reads the directory's groups for the group sync (contract §11), as plain records: through the same
// guarded connections as a login (connection.ts: our TLS or StartTLS, the frame guard, one deadline),
// bound as the service account (§8), with paged searches only (RFC 2696), and never writing. What
// clubhouse makes of the records (usernames canonicalised, the plan, the transaction) is the
// domain's (groups/sync.ts); a value that cannot be read back to a username is skipped here and
// reported, never a crash.
//
// Two connections, so that the directory works on one search while we read the other's answers:
// the groups on the first; on the second the classroom search, then (once a group names a member
// by DN) the user base, whose entries read member DNs back to usernames (member-dns.ts). OpenLDAP
// keeps one paged search per connection (paged-search.ts), hence two connections, not two searches
// on one. The entries are read by our own search (paged-search.ts), not by ldapts.
import type { LoginFailure } from '../authenticator.ts';
import { backendTls } from '../tls.ts';
import { bindServiceAccount, type LdapSettings } from './authenticator.ts';
import { type LdapConnection, withLdapConnections } from './connection.ts';
import { parseDn } from './dn.ts';
import { outOfProtocol } from './errors.ts';
import { type GroupEntry, readGroupEntry } from './group-entries.ts';
import { memberDns, underBase } from './member-dns.ts';
import { type PagedSearch, pagedSearch } from './paged-search.ts';

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

/** The read itself, on two bound connections (see the header). */
async function readGroups(
  [groups, second]: readonly LdapConnection[],
  settings: GroupDirectorySettings,
): Promise<DirectoryRead> {
  if (groups === undefined || second === undefined) throw new Error('two connections expected');
  await Promise.all([groups, second].map(({ client }) => bindServiceAccount(client, settings.ldap)));
  const groupBase = parseDn(settings.groupBaseDn);
  const userBase = parseDn(settings.ldap.baseDn ?? '');
  if (groupBase === null) throw outOfProtocol('LDAP_GROUP_BASE_DN is not a DN');
  if (userBase === null) throw outOfProtocol('LDAP_BASE_DN is not a DN');
  const named = (name: string | null) => (name === null ? null : name.toLowerCase());
  const types = {
    id: settings.idAttribute.toLowerCase(),
    shortDescription: named(settings.shortDescriptionAttribute),
    activities: named(settings.activitiesAttribute),
  };
  const binary = new Set(types.id === 'objectguid' ? [types.id] : []);
  const search = (base: string, filter: string, attributes: readonly string[]): PagedSearch => ({
    base,
    filter,
    attributes,
    binary,
    pageSize: settings.pageSize,
  });
  const skipped: DirectorySkip[] = [];
  const entries: GroupEntry[] = [];
  const classrooms = new Set<string>();
  const people = memberDns(userBase, settings.usernameAttribute.toLowerCase(), settings.usernameAttribute);
  let read = 0;

  const asked = ['cn', 'description', settings.idAttribute, 'member', 'uniqueMember', 'memberUid', 'owner'];
  if (settings.shortDescriptionAttribute !== null) asked.push(settings.shortDescriptionAttribute);
  if (settings.activitiesAttribute !== null) asked.push(settings.activitiesAttribute);
  await new Promise<void>((resolve, reject) => {
    // contract §11: classrooms are the entries matching both filters, evaluated by the directory.
    let onSecond =
      settings.classroomFilter === null
        ? Promise.resolve()
        : pagedSearch(
            second.guard,
            search(settings.groupBaseDn, `(&${settings.groupFilter}${settings.classroomFilter})`, [
              settings.idAttribute,
            ]),
            (entry) => {
              read++;
              underBase(entry.dn, groupBase, 'LDAP_GROUP_BASE_DN');
              const group = readGroupEntry(entry, types, settings.idAttribute);
              if ('externalId' in group) classrooms.add(group.externalId);
            },
          );
    onSecond.catch(reject);
    let usersAsked = false;
    const readUsers = () => {
      usersAsked = true;
      onSecond = onSecond.then(() =>
        pagedSearch(
          second.guard,
          search(settings.ldap.baseDn ?? '', `(${settings.usernameAttribute}=*)`, [
            settings.usernameAttribute,
          ]),
          (entry) => {
            read++;
            people.add(entry);
          },
        ),
      );
      onSecond.catch(reject);
    };
    pagedSearch(groups.guard, search(settings.groupBaseDn, settings.groupFilter, asked), (entry) => {
      read++;
      underBase(entry.dn, groupBase, 'LDAP_GROUP_BASE_DN');
      const group = readGroupEntry(entry, types, settings.idAttribute);
      if (!('externalId' in group))
        return skipped.push({ entry: entry.dn, value: null, reason: group.reason });
      entries.push(group);
      if (!usersAsked && (group.memberDns.length > 0 || group.ownerDns.length > 0)) readUsers();
    }).then(() => onSecond.then(resolve), reject);
  });

  const usernames = (group: GroupEntry, dns: readonly string[]) => {
    const out: string[] = [];
    for (const dn of dns) {
      const found = people.resolve(dn);
      if (typeof found === 'string') out.push(found);
      else skipped.push({ entry: group.dn, value: dn, reason: found.skip });
    }
    return out;
  };
  const records = entries.map((group): DirectoryGroupRecord => {
    const members = usernames(group, group.memberDns);
    for (const uid of group.memberUids) members.push(uid);
    return {
      externalId: group.externalId,
      dn: group.dn,
      name: group.name,
      description: group.description,
      shortDescription: group.shortDescription,
      activities: group.activities,
      classroom: classrooms.has(group.externalId),
      members,
      owners: usernames(group, group.ownerDns),
    };
  });
  return { ok: true, groups: records, skipped, entries: read };
}

/** The directory's groups, read on demand (the TLS options built once). */
export interface GroupDirectory {
  /**
   * Reads every group under the group base that matches the filter, with its members and owners as
   * usernames, within one deadline; a failure anywhere is the whole read's.
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
      withLdapConnections<DirectoryRead>(
        endpoint,
        tls,
        2,
        (connections) => readGroups(connections, settings),
        (failure, reason) => ({ ok: false, failure, reason }),
      ),
  };
}
