// The directory's side of the group sync (contract §11), before any state: each record checked with
// the import's rules (groups/import-fields.ts) and its usernames canonicalised as a login's
// (checkUsername). An entry the rules refuse is skipped and reported, and its synced group left as
// it is (plan.ts); a refused username, or one that several user entries answer to (contract §8's
// exactly-one rule), is skipped and reported.
import type { UsernameCase } from '../../auth/username.ts';
import type { DirectoryGroupRecord, DirectorySkip } from '../../backends/ldap/groups/records.ts';
import type { ImportProblem } from '../../store/errors.ts';
import type { Group } from '../../store/group-types.ts';
import { checkGroupFields, checkUsername } from '../import-fields.ts';

/** A directory group as clubhouse would store it: checked fields and canonical members. */
export interface WantedGroup {
  readonly externalId: string;
  readonly dn: string;
  readonly fields: Omit<Group, 'id'>;
  /** Canonical username → 1 (member) or 2 (administrator: an owner). */
  readonly members: ReadonlyMap<string, 1 | 2>;
  /**
   * The texts no attribute fills (the settings name none): contract §13 leaves them to the group's
   * administrators, so a synced group keeps what it has (a new one starts empty).
   */
  readonly unmapped: readonly ('short_description' | 'activities')[];
}

/** The directory's answer made ready to plan against any state (see prepareDirectory). */
export interface PreparedDirectory {
  readonly wanted: readonly WantedGroup[];
  /** Identities of entries that were read but refused: their synced groups are left as they are. */
  readonly refused: ReadonlySet<string>;
  readonly skipped: readonly DirectorySkip[];
  /** Every canonical username the wanted groups name (the store says which exist). */
  readonly usernames: readonly string[];
}

/** The code points of `a` before those of `b` (the same order on every machine and locale). */
export const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The key under which a directory compares usernames when a login searches for one (`uid`'s
 * caseIgnoreMatch, with RFC 4518's width and space folding): the UsernameCaseMapped form, whatever
 * USERNAME_CASE is, so that `ALICE` and `alice` are one name to it even where clubhouse keeps case.
 * A value the profile refuses keeps a folded form of its own (no canonical username can equal it).
 */
function directoryKey(value: string): string {
  const checked = checkUsername(value, 'lower');
  return 'username' in checked ? checked.username : value.normalize('NFKC').trim().toLowerCase();
}

/** How many user entries answer to each name (directoryKey), from every entry's username values. */
function entriesPerName(people: readonly (readonly string[])[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const values of people)
    for (const key of new Set(values.map(directoryKey))) counts.set(key, (counts.get(key) ?? 0) + 1);
  return counts;
}

/**
 * Checks the directory's records with the import's rules and canonicalises every username. A
 * username that several entries under the user base answer to (`people`: every entry's values)
 * is skipped and reported wherever a group names it, by DN or by memberUid (contract §8: exactly
 * one entry, as a login in search-then-bind mode requires; else a second entry with `uid: ALICE`
 * would make the real alice a member, or an administrator, of its groups).
 */
export function prepareDirectory(
  records: readonly DirectoryGroupRecord[],
  skippedByReader: readonly DirectorySkip[],
  people: readonly (readonly string[])[],
  usernameCase: UsernameCase,
): PreparedDirectory {
  const skipped = [...skippedByReader];
  const entriesFor = entriesPerName(people);
  const wanted: WantedGroup[] = [];
  const refused = new Set<string>();
  const seen = new Set<string>();
  const usernames = new Set<string>();
  // Each spelling is checked once (the profile, then how many entries answer to it), however many
  // groups name it.
  const checkedNames = new Map<string, { username: string } | { skip: string }>();
  const check = (raw: string): { username: string } | { skip: string } => {
    const checked = checkUsername(raw, usernameCase);
    if ('reason' in checked) return { skip: `username ${checked.reason}` };
    const entries = entriesFor.get(directoryKey(raw)) ?? 0;
    if (entries > 1)
      return {
        skip: `${entries} entries under the user base (LDAP_BASE_DN) answer to this username: a login refuses it, and so does the sync`,
      };
    return checked;
  };
  for (const record of records) {
    if (seen.has(record.externalId)) {
      skipped.push({
        entry: record.dn,
        value: record.externalId,
        reason: 'the same identity as another entry',
      });
      refused.add(record.externalId);
      continue;
    }
    seen.add(record.externalId);
    const problems: ImportProblem[] = [];
    const fields = checkGroupFields(
      {
        name: record.name,
        description: record.description,
        short_description: record.shortDescription ?? '',
        activities: record.activities ?? '',
        type: record.classroom ? 1 : 0,
      },
      'group',
      problems,
    );
    if (fields === null) {
      for (const problem of problems)
        skipped.push({ entry: record.dn, value: null, reason: `${problem.path} ${problem.reason}` });
      refused.add(record.externalId);
      continue;
    }
    const members = new Map<string, 1 | 2>();
    const add = (raw: string, status: 1 | 2) => {
      let checked = checkedNames.get(raw);
      if (checked === undefined) {
        checked = check(raw);
        checkedNames.set(raw, checked);
      }
      if ('skip' in checked) {
        skipped.push({ entry: record.dn, value: raw, reason: checked.skip });
        return;
      }
      // An owner is an administrator whether or not also listed as a member.
      if (status === 2 || !members.has(checked.username)) members.set(checked.username, status);
      usernames.add(checked.username);
    };
    for (const raw of record.members) add(raw, 1);
    for (const raw of record.owners) add(raw, 2);
    const unmapped = (
      [
        ['short_description', record.shortDescription],
        ['activities', record.activities],
      ] as const
    )
      .filter(([, value]) => value === null)
      .map(([field]) => field);
    wanted.push({ externalId: record.externalId, dn: record.dn, fields, members, unmapped });
  }
  return { wanted, refused, skipped, usernames: [...usernames].sort(byCodePoint) };
}
