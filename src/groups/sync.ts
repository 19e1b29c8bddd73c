// The group sync's rules (contract §11), pure: the directory's records and the store's state in, a
// plan out. The store writes the plan in the transaction that read the state (store/sql/group-sync.ts),
// so what a dry run prints is what a real run on the same data does.
// - A synced group is known by its directory identity: a rename or a move keeps its id.
// - Its fields and its members (1) and administrators (2) follow the directory; pending requests
//   (0) recorded in clubhouse are kept, unless the directory now names that user.
// - Groups created in clubhouse are never touched, and their names are never taken.
// - A synced group gone from the directory is removed with its memberships, or kept (--keep-removed).
// - A directory entry that the import's rules refuse (import-fields.ts) is skipped and reported; a
//   synced group whose entry is skipped is left as it is, never removed for it.
// - Usernames are canonicalised as a login's (checkUsername); a refused one is skipped and reported.
import type { UsernameCase } from '../auth/username.ts';
import type { DirectoryGroupRecord, DirectorySkip } from '../backends/ldap/groups-reader.ts';
import type { ImportProblem } from '../store/errors.ts';
import type { GroupSyncState, GroupSyncWrites, SyncedGroup } from '../store/group-sync-types.ts';
import type { Group, Membership, StoredMemberStatus } from '../store/group-types.ts';
import { MAX_GROUP_ID } from '../store/limits.ts';
import { checkGroupFields, checkUsername } from './import-fields.ts';

/** A directory group as clubhouse would store it: checked fields and canonical members. */
interface WantedGroup {
  readonly externalId: string;
  readonly dn: string;
  readonly fields: Omit<Group, 'id'>;
  /** Canonical username → 1 (member) or 2 (administrator: an owner). */
  readonly members: ReadonlyMap<string, 1 | 2>;
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
const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Checks the directory's records with the import's rules and canonicalises every username. */
export function prepareDirectory(
  records: readonly DirectoryGroupRecord[],
  skippedByReader: readonly DirectorySkip[],
  usernameCase: UsernameCase,
): PreparedDirectory {
  const skipped = [...skippedByReader];
  const wanted: WantedGroup[] = [];
  const refused = new Set<string>();
  const seen = new Set<string>();
  const usernames = new Set<string>();
  // Each spelling is canonicalised once, however many groups name it.
  const checkedNames = new Map<string, ReturnType<typeof checkUsername>>();
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
        short_description: record.shortDescription,
        activities: record.activities,
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
        checked = checkUsername(raw, usernameCase);
        checkedNames.set(raw, checked);
      }
      if ('reason' in checked) {
        skipped.push({ entry: record.dn, value: raw, reason: `username ${checked.reason}` });
        return;
      }
      // An owner is an administrator whether or not also listed as a member.
      if (status === 2 || !members.has(checked.username)) members.set(checked.username, status);
      usernames.add(checked.username);
    };
    for (const raw of record.members) add(raw, 1);
    for (const raw of record.owners) add(raw, 2);
    wanted.push({ externalId: record.externalId, dn: record.dn, fields, members });
  }
  return { wanted, refused, skipped, usernames: [...usernames].sort(byCodePoint) };
}

export interface SyncCounts {
  readonly groupsAdded: number;
  readonly groupsChanged: number;
  readonly groupsRemoved: number;
  /** Gone from the directory, kept by --keep-removed. */
  readonly groupsKept: number;
  readonly membershipsAdded: number;
  readonly membershipsChanged: number;
  readonly membershipsRemoved: number;
  readonly usersCreated: number;
  readonly skipped: number;
}

/** A membership whose status changes, with the status it had. */
interface MembershipChange extends Membership {
  readonly from: StoredMemberStatus;
}

export interface SyncPlan {
  readonly writes: GroupSyncWrites;
  /** The changed groups as they were, by id (to say what changed). */
  readonly before: ReadonlyMap<number, SyncedGroup>;
  readonly removed: readonly SyncedGroup[];
  readonly kept: readonly SyncedGroup[];
  readonly membershipChanges: readonly MembershipChange[];
  /** What the directory named that could not be used, and why. */
  readonly skipped: readonly DirectorySkip[];
  readonly counts: SyncCounts;
}

const FIELDS = ['name', 'description', 'short_description', 'activities', 'type'] as const;

const sameFields = (a: Omit<Group, 'id'>, b: Omit<Group, 'id'>) =>
  FIELDS.every((field) => a[field] === b[field]);

/**
 * Decides which directory groups get which name: a group whose name is a local group's, or another
 * directory group's (the first by clubhouse id, then by identity, wins), is skipped; a skipped synced
 * group keeps its current name, which may in turn push out a group that wanted it. Repeated until
 * nothing more is pushed out.
 */
function assignNames(
  wanted: readonly WantedGroup[],
  existing: ReadonlyMap<string, SyncedGroup>,
  reserved: ReadonlySet<string>,
  skipped: DirectorySkip[],
): Set<string> {
  const failed = new Map<string, string>();
  for (;;) {
    const taken = new Set(reserved);
    for (const group of wanted) {
      const current = existing.get(group.externalId);
      if (failed.has(group.externalId) && current !== undefined) taken.add(current.name);
    }
    let more = false;
    const claimed = new Map<string, string>();
    for (const group of wanted) {
      if (failed.has(group.externalId)) continue;
      const name = group.fields.name;
      const reason = reserved.has(name)
        ? `the name "${name}" is taken by a group created in clubhouse or kept as it is`
        : taken.has(name)
          ? `the name "${name}" is kept by a synced group left as it is`
          : claimed.has(name)
            ? `the name "${name}" is also the name of ${claimed.get(name)}`
            : null;
      if (reason !== null) {
        failed.set(group.externalId, reason);
        more = true;
      } else claimed.set(name, group.dn);
    }
    if (!more) break;
  }
  for (const group of wanted) {
    const reason = failed.get(group.externalId);
    if (reason !== undefined) skipped.push({ entry: group.dn, value: null, reason });
  }
  return new Set(failed.keys());
}

/** The plan that makes the store's synced groups the directory's (see the header for the rules). */
export function planGroupSync(
  directory: PreparedDirectory,
  state: GroupSyncState,
  options: { readonly keepRemoved: boolean },
): SyncPlan {
  const skipped = [...directory.skipped];
  const existing = new Map(state.synced.map((group) => [group.externalId, group]));
  const inDirectory = new Set([...directory.wanted.map((g) => g.externalId), ...directory.refused]);
  const gone = state.synced.filter((group) => !inDirectory.has(group.externalId));
  const kept = options.keepRemoved ? gone : [];
  const removed = options.keepRemoved ? [] : gone;
  // Names no directory group may take: local groups', and those of synced groups left as they are.
  const reserved = new Set(state.localNames);
  for (const group of [...kept, ...state.synced.filter((g) => directory.refused.has(g.externalId))])
    reserved.add(group.name);

  // Existing groups first (by id), then new ones (by identity): an existing name is kept first.
  const order = [...directory.wanted].sort((a, b) => {
    const ia = existing.get(a.externalId)?.id ?? Number.POSITIVE_INFINITY;
    const ib = existing.get(b.externalId)?.id ?? Number.POSITIVE_INFINITY;
    return ia !== ib ? ia - ib : byCodePoint(a.externalId, b.externalId);
  });
  const failed = assignNames(order, existing, reserved, skipped);

  const changeGroups: SyncedGroup[] = [];
  const addGroups: SyncedGroup[] = [];
  const before = new Map<number, SyncedGroup>();
  const idOf = new Map<string, number>();
  let nextId = state.maxId;
  for (const group of order) {
    if (failed.has(group.externalId)) continue;
    const current = existing.get(group.externalId);
    if (current !== undefined) {
      idOf.set(group.externalId, current.id);
      if (!sameFields(current, group.fields)) {
        before.set(current.id, current);
        changeGroups.push({ ...group.fields, id: current.id, externalId: group.externalId });
      }
      continue;
    }
    if (nextId >= MAX_GROUP_ID) {
      skipped.push({
        entry: group.dn,
        value: null,
        reason: `no free group id (the largest, ${MAX_GROUP_ID}, is in use)`,
      });
      continue;
    }
    nextId++;
    idOf.set(group.externalId, nextId);
    addGroups.push({ ...group.fields, id: nextId, externalId: group.externalId });
  }

  const current = new Map<number, Map<string, StoredMemberStatus>>();
  for (const m of state.memberships) {
    const rows = current.get(m.group) ?? new Map<string, StoredMemberStatus>();
    current.set(m.group, rows);
    rows.set(m.username, m.status);
  }
  const addMemberships: Membership[] = [];
  const changeMemberships: Membership[] = [];
  const membershipChanges: MembershipChange[] = [];
  const removeMemberships: Membership[] = [];
  for (const group of order) {
    const id = idOf.get(group.externalId);
    if (id === undefined) continue;
    const rows = current.get(id) ?? new Map<string, StoredMemberStatus>();
    for (const [username, status] of group.members) {
      const had = rows.get(username);
      if (had === undefined) addMemberships.push({ group: id, username, status });
      else if (had !== status) {
        changeMemberships.push({ group: id, username, status });
        membershipChanges.push({ group: id, username, status, from: had });
      }
    }
    for (const [username, status] of rows) {
      // contract §11: a pending request recorded in clubhouse stays until the directory decides.
      if (status !== 0 && !group.members.has(username))
        removeMemberships.push({ group: id, username, status });
    }
  }
  const byPair = (a: Membership, b: Membership) => a.group - b.group || byCodePoint(a.username, b.username);
  addMemberships.sort(byPair);
  changeMemberships.sort(byPair);
  membershipChanges.sort(byPair);
  removeMemberships.sort(byPair);
  const createUsers = [...new Set(addMemberships.map((m) => m.username))]
    .filter((username) => !state.users.has(username))
    .sort(byCodePoint);
  changeGroups.sort((a, b) => a.id - b.id);
  return {
    writes: {
      removeGroups: removed.map((group) => group.id),
      changeGroups,
      addGroups,
      createUsers,
      removeMemberships,
      changeMemberships,
      addMemberships,
    },
    before,
    removed,
    kept,
    membershipChanges,
    skipped,
    counts: {
      groupsAdded: addGroups.length,
      groupsChanged: changeGroups.length,
      groupsRemoved: removed.length,
      groupsKept: kept.length,
      membershipsAdded: addMemberships.length,
      membershipsChanged: changeMemberships.length,
      membershipsRemoved: removeMemberships.length,
      usersCreated: createUsers.length,
      skipped: skipped.length,
    },
  };
}

/** The counts as one sentence (what every run prints and logs). */
export function countsText(counts: SyncCounts): string {
  const c = counts;
  return [
    `groups: ${c.groupsAdded} added, ${c.groupsChanged} changed, ${c.groupsRemoved} removed, ${c.groupsKept} kept`,
    `memberships: ${c.membershipsAdded} added, ${c.membershipsChanged} changed, ${c.membershipsRemoved} removed`,
    `users: ${c.usersCreated} created`,
    `skipped: ${c.skipped}`,
  ].join('; ');
}

/** Every change of the plan, one line each, in a stable order: what a run prints (a dry run too). */
export function planLines(plan: SyncPlan): string[] {
  const lines = [countsText(plan.counts)];
  const { writes } = plan;
  for (const group of writes.addGroups)
    lines.push(`group added ${group.id} ${JSON.stringify(group.name)} (${group.externalId})`);
  for (const group of writes.changeGroups) {
    const was = plan.before.get(group.id);
    const fields = FIELDS.filter((field) => was === undefined || was[field] !== group[field]);
    const rename = was !== undefined && was.name !== group.name ? ` (was ${JSON.stringify(was.name)})` : '';
    lines.push(`group changed ${group.id} ${JSON.stringify(group.name)}${rename}: ${fields.join(', ')}`);
  }
  for (const group of plan.removed) lines.push(`group removed ${group.id} ${JSON.stringify(group.name)}`);
  for (const group of plan.kept)
    lines.push(`group kept ${group.id} ${JSON.stringify(group.name)} (gone from the directory)`);
  for (const username of writes.createUsers) lines.push(`user created ${username}`);
  for (const m of writes.addMemberships) lines.push(`membership added ${m.group} ${m.username} ${m.status}`);
  for (const m of plan.membershipChanges)
    lines.push(`membership changed ${m.group} ${m.username} ${m.from} -> ${m.status}`);
  for (const m of writes.removeMemberships)
    lines.push(`membership removed ${m.group} ${m.username} ${m.status}`);
  for (const skip of plan.skipped)
    lines.push(
      `skipped ${skip.entry}${skip.value === null ? '' : ` ${JSON.stringify(skip.value)}`}: ${skip.reason}`,
    );
  return lines;
}
