// The directory's answers made into the group sync's records (contract §11): each group entry's
// fields and identity (entries.ts), its member and owner DNs read back to usernames through
// the user base's entries (member-dns.ts), classrooms by the classroom search. Done after the read
// (reader.ts), and only when a run needs the records: a run whose answers have the digest the
// last writing run recorded replays that run instead (groups/sync/shortcut.ts). Every entry must be
// under the base it was asked about and well formed, else the answers cannot be used at all.
import type { BackendFailure } from '../../authenticator.ts';
import type { Element } from '../ber.ts';
import { parseDn } from '../dn.ts';
import { classifyLdapError, outOfProtocol } from '../errors.ts';
import { type GroupFields, readGroupEntry } from './entries.ts';
import { memberDns, underBase } from './member-dns.ts';
import { readSearchEntry, type SearchEntry } from './search-ber.ts';

/** What of the settings makes records of the answers (a part of GroupDirectorySettings). */
export interface RecordSettings {
  readonly ldap: { readonly baseDn: string | null };
  readonly groupBaseDn: string;
  readonly usernameAttribute: string;
  readonly idAttribute: string;
  readonly shortDescriptionAttribute: string | null;
  readonly activitiesAttribute: string | null;
}

/** One group entry as the directory has it. */
export interface DirectoryGroupRecord extends GroupFields {
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

/** A SearchResultEntry as answered: its message, and where the entry lies in it. */
export interface AnsweredEntry {
  readonly frame: Buffer;
  readonly op: Element;
}

/** Every entry of the three searches, in the order answered. */
export interface DirectoryAnswers {
  readonly groups: readonly AnsweredEntry[];
  readonly classrooms: readonly AnsweredEntry[];
  readonly users: readonly AnsweredEntry[];
}

export type DirectoryRecords =
  | {
      readonly ok: true;
      readonly groups: readonly DirectoryGroupRecord[];
      readonly skipped: readonly DirectorySkip[];
      /**
       * The username attribute's values of every user entry under the user base, one list per
       * entry (empty when no group names a member by DN or memberUid, and so none was read).
       */
      readonly people: readonly (readonly string[])[];
    }
  | { readonly ok: false; readonly failure: BackendFailure; readonly reason: string };

/** The records of `answers`, or why they cannot be used. */
export function groupRecords(answers: DirectoryAnswers, settings: RecordSettings): DirectoryRecords {
  try {
    return { ok: true, ...records(answers, settings) };
  } catch (err) {
    const { failure, reason } = classifyLdapError(err);
    return { ok: false, failure, reason };
  }
}

function records(answers: DirectoryAnswers, settings: RecordSettings) {
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
  const read = ({ frame, op }: AnsweredEntry): SearchEntry => {
    const entry = readSearchEntry(frame, op, binary);
    if (!entry.ok) throw outOfProtocol(`malformed search entry: ${entry.reason}`);
    return entry.value;
  };
  const inGroupBase = (entry: SearchEntry) => {
    underBase(entry.dn, groupBase, 'LDAP_GROUP_BASE_DN');
    return readGroupEntry(entry, types, settings.idAttribute);
  };

  // contract §11: classrooms are the entries matching both filters, evaluated by the directory.
  const classrooms = new Set<string>();
  for (const answered of answers.classrooms) {
    const group = inGroupBase(read(answered));
    if ('externalId' in group) classrooms.add(group.externalId);
  }
  const people = memberDns(userBase, settings.usernameAttribute.toLowerCase(), settings.usernameAttribute);
  for (const answered of answers.users) people.add(read(answered));
  const skipped: DirectorySkip[] = [];
  const entries = [];
  for (const answered of answers.groups) {
    const entry = read(answered);
    const group = inGroupBase(entry);
    if ('externalId' in group) entries.push(group);
    else skipped.push({ entry: entry.dn, value: null, reason: group.reason });
  }

  const usernames = (groupDn: string, dns: readonly string[]) => {
    const out: string[] = [];
    for (const dn of dns) {
      const found = people.resolve(dn);
      if (typeof found === 'string') out.push(found);
      else skipped.push({ entry: groupDn, value: dn, reason: found.skip });
    }
    return out;
  };
  const groups = entries.map((group): DirectoryGroupRecord => {
    const members = usernames(group.dn, group.memberDns);
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
      owners: usernames(group.dn, group.ownerDns),
    };
  });
  return { groups, skipped, people: people.names() };
}
