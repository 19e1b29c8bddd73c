// One group entry of the directory as the group sync reads it (reader.ts): its identity, its
// fields' first values, and its members and owners as the directory gives them (DNs still to be
// read back to usernames, member-dns.ts; memberUid values as they are). One pass over the entry's
// attributes, as the search answered them (search-ber.ts: types in lower case).
import type { EntryAttribute, SearchEntry } from './search-ber.ts';

/** Which attribute types (lower case) the settings name. */
export interface GroupTypes {
  /** The identity: `entryuuid`, or `objectguid` (then binary). */
  readonly id: string;
  readonly shortDescription: string | null;
  readonly activities: string | null;
}

/** A group entry before its member DNs are read back to usernames. */
/** What a group entry says of the group itself, as read and as recorded (records.ts). */
export interface GroupFields {
  /** The id attribute's value (objectGUID as its usual text form), lower case. */
  readonly externalId: string;
  readonly dn: string;
  /** `cn`'s first value; '' when absent. */
  readonly name: string;
  readonly description: string;
  /** null when the settings name no attribute for the field (contract §13: clubhouse's to edit). */
  readonly shortDescription: string | null;
  readonly activities: string | null;
}

export interface GroupEntry extends GroupFields {
  /** member values, then uniqueMember values (its `#'…'B` suffix dropped). */
  readonly memberDns: readonly string[];
  readonly memberUids: readonly string[];
  readonly ownerDns: readonly string[];
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
function externalIdOf(value: string | Buffer | undefined, binary: boolean): string | null {
  if (value === undefined) return null;
  if (binary) return Buffer.isBuffer(value) ? guidText(value) : null;
  const id = text(value).trim().toLowerCase();
  return id === '' ? null : id;
}

/** RFC 4517 §3.3.21: uniqueMember is a DN with an optional `#'0101'B` unique identifier. */
const UNIQUE_ID = /#'[01]*'B$/;
const dnValues = (attribute: EntryAttribute): string[] =>
  attribute.values.map((value) => {
    const dn = text(value);
    return dn.endsWith("'B") ? dn.replace(UNIQUE_ID, '') : dn;
  });

/** Active Directory hands out at most 1500 values of a big group's member at once (range retrieval). */
const RANGED = /^(member|uniquemember);range=/;

/** The entry's parts, or why it cannot be used (`idName`: the id attribute as the settings spell it). */
export function readGroupEntry(
  entry: SearchEntry,
  types: GroupTypes,
  idName: string,
): GroupEntry | { readonly reason: string } {
  let externalId: string | null = null;
  let ranged = false;
  const first = {
    cn: '',
    description: '',
    short: types.shortDescription === null ? null : '',
    activities: types.activities === null ? null : '',
  } as { cn: string; description: string; short: string | null; activities: string | null };
  let members: string[] = [];
  let uniqueMembers: string[] = [];
  let memberUids: string[] = [];
  let ownerDns: string[] = [];
  for (const attribute of entry.attributes) {
    const { type, values } = attribute;
    if (type === types.id) externalId = externalIdOf(values[0], types.id === 'objectguid');
    if (type === 'cn') first.cn = text(values[0]);
    if (type === 'description') first.description = text(values[0]);
    if (type === types.shortDescription) first.short = text(values[0]);
    if (type === types.activities) first.activities = text(values[0]);
    if (type === 'member') members = dnValues(attribute);
    else if (type === 'uniquemember') uniqueMembers = dnValues(attribute);
    else if (type === 'owner') ownerDns = dnValues(attribute);
    else if (type === 'memberuid') memberUids = values.map(text);
    else if (RANGED.test(type)) ranged = true;
  }
  if (externalId === null) return { reason: `no readable ${idName}` };
  // A partial member list would remove the others: the group is left as it is.
  if (ranged)
    return { reason: 'its member list comes in ranges (more values than the directory returns at once)' };
  return {
    externalId,
    dn: entry.dn,
    name: first.cn,
    description: first.description,
    shortDescription: first.short,
    activities: first.activities,
    memberDns: uniqueMembers.length === 0 ? members : [...members, ...uniqueMembers],
    memberUids,
    ownerDns,
  };
}
