// Reads the directory's groups for the group sync (contract §11): through the same guarded
// connections as a login (connection.ts: our TLS or StartTLS, the frame guard, one deadline), bound
// as the service account (§8), with paged searches only (RFC 2696), and never writing. What
// clubhouse makes of the records (usernames canonicalised, the plan, the transaction) is the
// domain's (groups/sync/plan.ts); a value that cannot be read back to a username is skipped and
// reported, never a crash.
//
// Two connections, so that the directory works on one search while we take the other's answers:
// the groups on the first; on the second the classroom search, then (once a group names a member
// by DN or by memberUid) the user base, whose entries read member DNs back to usernames and say
// which usernames several entries answer to. OpenLDAP keeps one paged search per connection
// (paged-search.ts), hence two connections, not two searches on one.
//
// The read keeps the entries as answered, with a digest of them; the records are made of them on
// demand (records.ts). A run whose digest is the one the last writing run recorded needs no
// records at all (groups/sync/shortcut.ts): the same answers make the same records.
import { createHash, type Hash } from 'node:crypto';
import type { BackendFailure } from '../../authenticator.ts';
import { backendTls } from '../../tls.ts';
import { bindServiceAccount } from '../authenticator.ts';
import type { Element } from '../ber.ts';
import { type LdapConnection, withLdapConnections } from '../connection.ts';
import type { LdapSettings } from '../settings.ts';
import { type PagedSearch, pagedSearch } from './paged-search.ts';
import { type AnsweredEntry, type DirectoryRecords, groupRecords, type RecordSettings } from './records.ts';
import { readSearchEntry } from './search-ber.ts';

/** How the sync finds and reads the groups (contract §11), besides the directory and its account. */
export interface GroupDirectorySettings extends RecordSettings {
  /** The directory, TLS and the service account (§8); `baseDn` is the user base member DNs are under. */
  readonly ldap: Pick<LdapSettings, 'url' | 'security' | 'caFile' | 'bindDn' | 'bindPassword' | 'baseDn'>;
  readonly groupFilter: string;
  /** Entries matching both filters are classrooms (type 1); null: none is. */
  readonly classroomFilter: string | null;
  /** The directory's identity of an entry: `entryUUID` (operational, asked for by name) or `objectGUID`. */
  readonly idAttribute: string;
  /** One deadline over the whole read: connect, TLS, bind and every page. */
  readonly timeoutMs: number;
  readonly pageSize: number;
}

type DirectoryRead =
  | {
      readonly ok: true;
      /** Entries read: groups, the classroom search's, and user entries (for the bench's figures). */
      readonly entries: number;
      /**
       * Of every entry answered, search by search, and of the settings that make records of them:
       * two reads with the same digest make the same records, or fail alike.
       */
      readonly digest: string;
      /** The records (made once, when first asked), or why the answers cannot be used. */
      records(): DirectoryRecords;
    }
  | { readonly ok: false; readonly failure: BackendFailure; readonly reason: string };

/**
 * The version of how records are made of the answers (records.ts, entries.ts,
 * member-dns.ts, dn.ts, search-ber.ts): bump it when that changes, so that no digest of answers
 * read under the old rules matches.
 */
const RECORD_RULES = 2;

/** A group entry's answer can hold thousands of member DNs: far more than a login's answers. */
const MAX_GROUP_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * Attribute types that name members or owners, by DN or by username (memberUid): the user base is
 * read once a group has one, to read DNs back to usernames and to know which usernames several
 * entries answer to (the sync skips those, as a login refuses them).
 */
const MEMBER_TYPES = new Set(['member', 'uniquemember', 'owner', 'memberuid']);
const NO_BINARY: ReadonlySet<string> = new Set();

/** The read itself, on two bound connections (see the header). */
async function readGroups(
  [groups, second]: readonly LdapConnection[],
  settings: GroupDirectorySettings,
): Promise<DirectoryRead> {
  if (groups === undefined || second === undefined) throw new Error('two connections expected');
  await Promise.all([groups, second].map(({ client }) => bindServiceAccount(client, settings.ldap)));
  const search = (base: string, filter: string, attributes: readonly string[]): PagedSearch => ({
    base,
    filter,
    attributes,
    pageSize: settings.pageSize,
  });
  const answers = {
    groups: [] as AnsweredEntry[],
    classrooms: [] as AnsweredEntry[],
    users: [] as AnsweredEntry[],
  };
  const hashes = {
    groups: createHash('sha256'),
    classrooms: createHash('sha256'),
    users: createHash('sha256'),
  };
  const keep = (into: AnsweredEntry[], hash: Hash) => (frame: Buffer, op: Element) => {
    into.push({ frame, op });
    // The entry's content: its name and attributes, without the message id (which varies).
    hash.update(frame.subarray(op.start, op.end));
  };
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
            keep(answers.classrooms, hashes.classrooms),
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
          keep(answers.users, hashes.users),
        ),
      );
      onSecond.catch(reject);
    };
    const keepGroup = keep(answers.groups, hashes.groups);
    pagedSearch(groups.guard, search(settings.groupBaseDn, settings.groupFilter, asked), (frame, op) => {
      keepGroup(frame, op);
      if (usersAsked) return;
      // A malformed entry names nobody here; making the records refuses it.
      const entry = readSearchEntry(frame, op, NO_BINARY);
      if (entry.ok && entry.value.attributes.some((a) => MEMBER_TYPES.has(a.type) && a.values.length > 0))
        readUsers();
    }).then(() => onSecond.then(resolve, reject), reject);
  });

  const digest = createHash('sha256').update(JSON.stringify([RECORD_RULES, interpretation(settings)]));
  for (const hash of [hashes.groups, hashes.classrooms, hashes.users]) digest.update(hash.digest());
  let records: DirectoryRecords | undefined;
  return {
    ok: true,
    entries: answers.groups.length + answers.classrooms.length + answers.users.length,
    digest: digest.digest('hex'),
    records: () => {
      records ??= groupRecords(answers, settings);
      return records;
    },
  };
}

/** The settings that decide what is searched and what records are made of it (no secrets). */
const interpretation = (settings: GroupDirectorySettings) => ({
  groupBaseDn: settings.groupBaseDn,
  groupFilter: settings.groupFilter,
  classroomFilter: settings.classroomFilter,
  userBaseDn: settings.ldap.baseDn,
  usernameAttribute: settings.usernameAttribute,
  idAttribute: settings.idAttribute,
  shortDescriptionAttribute: settings.shortDescriptionAttribute,
  activitiesAttribute: settings.activitiesAttribute,
});

/** The directory's groups, read on demand (the TLS options built once). */
export interface GroupDirectory {
  /**
   * Reads every group under the group base that matches the filter, and the entries that say who
   * its members and owners are, within one deadline; a failure anywhere is the whole read's.
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
