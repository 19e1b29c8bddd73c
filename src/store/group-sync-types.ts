// The group sync's seam (contract §11): what the store hands the planner, what the planner asks it
// to write, and the lease that keeps the sync to one instance at a time. The store writes a plan in
// one transaction and never decides one: the rules are groups/sync/plan.ts's.
import type { Group, Membership } from './group-types.ts';

/** A group that came from the directory: its clubhouse row and its directory identity. */
export interface SyncedGroup extends Group {
  readonly externalId: string;
}

/** What the planner is given, read in the transaction that then writes its answer. */
export interface GroupSyncState {
  /** Every group that came from the directory. */
  readonly synced: readonly SyncedGroup[];
  /** The names of the groups created in clubhouse (never touched, and never given away). */
  readonly localNames: ReadonlySet<string>;
  /** Every membership of a synced group, pending ones included. */
  readonly memberships: readonly Membership[];
  /** Of the usernames the directory names, those that exist. */
  readonly users: ReadonlySet<string>;
  /** Every group id in use, ascending: new groups take free ones (store/group-ids.ts). */
  readonly ids: readonly number[];
}

/** The rows a plan writes; a plan with nothing in it writes nothing (no statement at all). */
export interface GroupSyncWrites {
  /** Synced groups to delete (their memberships follow by foreign key). */
  readonly removeGroups: readonly number[];
  /** Synced groups whose fields changed: their new values (the id and external id stay). */
  readonly changeGroups: readonly SyncedGroup[];
  /** New synced groups, with the ids the planner gave them. */
  readonly addGroups: readonly SyncedGroup[];
  /** Usernames to create, active (contract §4: as an import creates one). */
  readonly createUsers: readonly string[];
  readonly removeMemberships: readonly Membership[];
  readonly changeMemberships: readonly Membership[];
  readonly addMemberships: readonly Membership[];
}

/** A plan's writes when there is nothing to write. */
export const NO_WRITES: GroupSyncWrites = Object.freeze({
  removeGroups: [],
  changeGroups: [],
  addGroups: [],
  createUsers: [],
  removeMemberships: [],
  changeMemberships: [],
  addMemberships: [],
});

/** Who runs a lease-guarded job; the transaction that writes checks the lease is still theirs. */
export interface LeaseHolder {
  readonly name: string;
  readonly holder: string;
}

/**
 * How a run whose inputs (the directory as read, the options) are those of the last writing run can
 * skip reading the store's state and planning (contract §11; sql/group-sync-mark.ts says when the
 * store allows it). The store keeps what `record` answers; the domain decides what it means.
 */
export interface SyncShortcut<P> {
  /** A digest of everything the plan depends on besides the store's state. */
  readonly digest: string;
  /** What to keep about `plan`, planned against the state just written: null when it would write. */
  record(plan: P): string | null;
  /** The plan again, from what `record` kept, for a store unchanged since. */
  replay(recorded: string): P;
}

/** How GroupSyncStore.apply runs: writing or not, under which lease, with which shortcut. */
export interface ApplyOptions<P> {
  readonly write: boolean;
  readonly lease: LeaseHolder | null;
  readonly shortcut: SyncShortcut<P> | null;
}

export interface GroupSyncStore {
  /**
   * One transaction: reads the state (writers of groups held off), asks `plan` what to do with it and
   * writes the answer's `writes`, unless `write` is false (a dry run: a read-only snapshot). With a
   * lease, the transaction first checks that `lease` still holds it and keeps it held until commit
   * (LeaseLostError otherwise). `usernames` (those the directory names) is asked only when the
   * state is read; with a shortcut the state may not be (see SyncShortcut).
   */
  apply<P extends { readonly writes: GroupSyncWrites }>(
    usernames: () => readonly string[],
    plan: (state: GroupSyncState) => P,
    options: ApplyOptions<P>,
  ): Promise<P>;
  /**
   * Whether `apply` with a shortcut of `digest` would now replay rather than read the state (a
   * snapshot's answer: apply asks again in its own transaction).
   */
  replayable(digest: string): Promise<boolean>;
  /** Takes the lease for `ttlMs` if it is free, expired or already `holder`'s; true when taken. */
  takeLease(lease: LeaseHolder, ttlMs: number): Promise<boolean>;
  /** Extends a lease still held; false when it was lost (expired and taken by another). */
  renewLease(lease: LeaseHolder, ttlMs: number): Promise<boolean>;
  releaseLease(lease: LeaseHolder): Promise<void>;
  /** Who holds the lease `name` now, and for how many more ms; null when nobody does. */
  leaseHolder(name: string): Promise<{ readonly holder: string; readonly remainingMs: number } | null>;
}
