// The group sync's rules (contract §11), pure: the directory's records and the store's state in, a
// plan out. The store writes the plan in the transaction that read the state (store/sql/group-sync.ts),
// so what a dry run prints is what a real run on the same data does.
// - A synced group is known by its directory identity: a rename or a move keeps its id.
// - Its fields and its members (1) and administrators (2) follow the directory (a text that no
//   attribute fills is left as clubhouse has it: its administrators edit it, contract §13); pending requests
//   (0) recorded in clubhouse are kept, unless the directory now names that user.
// - Groups created in clubhouse are never touched, and their names are never taken.
// - A synced group gone from the directory is removed with its memberships, or kept (--keep-removed).
// - A directory entry that the import's rules refuse (groups/import-fields.ts) is skipped and reported; a
//   synced group whose entry is skipped is left as it is, never removed for it.
// - Usernames are canonicalised as a login's (checkUsername); a refused one is skipped and reported.
// - A new group takes a free id (store/group-ids.ts: above every id in use, else the lowest unused);
//   a run without enough free ids fails, writing nothing (NoFreeGroupIdError).
// The directory's side is made ready first (prepare.ts); name clashes are settled by
// names.ts. A change to these rules (here, prepare.ts, names.ts, groups/import-fields.ts,
// the username profile) must bump SYNC_RULES (shortcut.ts), or a store that the last run left
// as it is would replay that run's outcome under the old rules until something changes.
import type { DirectorySkip } from '../../backends/ldap/groups/records.ts';
import { freeGroupIds } from '../../store/group-ids.ts';
import {
  type GroupSyncState,
  type GroupSyncWrites,
  NO_WRITES,
  type SyncedGroup,
} from '../../store/group-sync-types.ts';
import type { Group, Membership, StoredMemberStatus } from '../../store/group-types.ts';
import { MAX_GROUP_ID } from '../../store/limits.ts';
import { assignNames } from './names.ts';
import { byCodePoint, type PreparedDirectory, type WantedGroup } from './prepare.ts';

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

/** A run that would add groups finds too few free ids (contract §11: it fails, writing nothing). */
export class NoFreeGroupIdError extends Error {
  override readonly name = 'NoFreeGroupIdError';
  constructor(wanted: number, inUse: number) {
    super(
      `no free group id for ${wanted} new ${wanted === 1 ? 'group' : 'groups'}: ${inUse} of the ${MAX_GROUP_ID} ids are in use; nothing written`,
    );
  }
}

export const FIELDS = ['name', 'description', 'short_description', 'activities', 'type'] as const;

const sameFields = (a: Omit<Group, 'id'>, b: Omit<Group, 'id'>) =>
  FIELDS.every((field) => a[field] === b[field]);

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
  const before = new Map<number, SyncedGroup>();
  const idOf = new Map<string, number>();
  const fresh: WantedGroup[] = [];
  for (const group of order) {
    if (failed.has(group.externalId)) continue;
    const current = existing.get(group.externalId);
    if (current === undefined) {
      fresh.push(group);
      continue;
    }
    idOf.set(group.externalId, current.id);
    // contract §13: a text no attribute fills is the group administrators' to keep.
    const fields = { ...group.fields };
    for (const field of group.unmapped) fields[field] = current[field];
    if (!sameFields(current, fields)) {
      before.set(current.id, current);
      changeGroups.push({ ...fields, id: current.id, externalId: group.externalId });
    }
  }
  // contract §11: new groups take free ids (the one rule, store/group-ids.ts); the ids of groups
  // this run removes are not among them (the removal and the add are one transaction). A table
  // without enough free ids fails the run: nothing is written, rather than groups skipped.
  const freeIds = freeGroupIds(state.ids, fresh.length);
  if (freeIds === null) throw new NoFreeGroupIdError(fresh.length, state.ids.length);
  const addGroups = fresh.map((group, index): SyncedGroup => {
    const id = freeIds[index]!;
    idOf.set(group.externalId, id);
    return { ...group.fields, id, externalId: group.externalId };
  });

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

/** True when `plan` writes nothing: no group, membership or user added, changed or removed. */
export function changesNothing(plan: SyncPlan): boolean {
  return Object.values(plan.writes).every((rows) => rows.length === 0);
}

/** The plan of a run that finds nothing to change: only groups kept (--keep-removed) and skips. */
export function unchangedPlan(kept: readonly SyncedGroup[], skipped: readonly DirectorySkip[]): SyncPlan {
  return {
    writes: NO_WRITES,
    before: new Map(),
    removed: [],
    kept,
    membershipChanges: [],
    skipped,
    counts: {
      groupsAdded: 0,
      groupsChanged: 0,
      groupsRemoved: 0,
      groupsKept: kept.length,
      membershipsAdded: 0,
      membershipsChanged: 0,
      membershipsRemoved: 0,
      usersCreated: 0,
      skipped: skipped.length,
    },
  };
}
