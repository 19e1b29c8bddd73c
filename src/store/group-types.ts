// The groups' seam (contract §3, §4): groups, memberships, the import's data, the store that keeps
// them, and how the answers kept in memory are written (GroupJson). Every implementation passes the
// contract tests; methods throw StoreUnavailableError when the store cannot answer.

export type MemberStatus = -1 | 0 | 1 | 2;
export type StoredMemberStatus = 0 | 1 | 2;
export type GroupType = 0 | 1;

export interface Group {
  readonly id: number;
  readonly name: string;
  readonly description: string;
  readonly short_description: string;
  readonly activities: string;
  readonly type: GroupType;
}

/** A group to add: without an id, it gets the one after the largest. */
export type NewGroup = Omit<Group, 'id'> & { readonly id: number | null };

export interface GroupDetail extends Group {
  readonly member_status: MemberStatus;
}

export interface Membership {
  readonly group: number;
  readonly username: string;
  readonly status: StoredMemberStatus;
}

export interface ImportData {
  readonly groups: readonly Group[];
  /** `active: null` (no `active` in the file) leaves an existing user's flag as it is (contract §4). */
  readonly users: readonly { username: string; active: boolean | null }[];
  readonly memberships: readonly Membership[];
}

export interface GroupStore {
  /** Groups where the user is a member or administrator, ordered by id. */
  listForMember(username: string): Promise<Group[]>;
  /** A group with the user's membership status, or null when there is no such group. */
  detail(id: number, username: string): Promise<GroupDetail | null>;
  list(): Promise<Group[]>;
  /** Inserts a new group, never overwriting: ImportConflictError when its id or name is taken. */
  addGroup(group: NewGroup): Promise<Group>;
  /** Inserts or updates by id. */
  upsertGroup(group: Group): Promise<void>;
  removeGroup(id: number): Promise<boolean>;
  setMembership(membership: Membership): Promise<void>;
  removeMembership(group: number, username: string): Promise<boolean>;
  /**
   * Applies validated import data in one transaction (upserts; idempotent). Ending the sessions of
   * users it disables is applyImport's job: sessions may live in another store (Redis).
   */
  importData(data: ImportData): Promise<{ groups: number; users: number; memberships: number }>;
  exportData(): Promise<ImportData>;
  /**
   * contract §13, one transaction: the group's row locked (changes of one group's memberships run one
   * after the other, on every engine), the facts read, `decide` asked, and its answer written (a user
   * the operator names is created). Null when there is no such group.
   */
  changeMembership<D extends MembershipVerdict>(
    change: MembershipChange,
    decide: (facts: MembershipFacts) => D,
  ): Promise<MembershipChanged<D> | null>;
  /** The group's members (status 0, 1, 2 or all), requests first, then by username; null: no such group. */
  members(group: number, actor: string, status: StoredMemberStatus | null): Promise<GroupMembers | null>;
  /**
   * contract §13, one transaction: the group's row locked, `refuse` asked about the actor, the texts
   * written; the group as its detail shows it to the actor. Null when there is no such group.
   */
  changeTexts<R>(
    group: number,
    actor: string,
    texts: GroupTexts,
    refuse: (facts: GroupAdministration) => R | null,
  ): Promise<{ readonly refused: R } | { readonly group: GroupDetail } | null>;
  /** contract §13: a page of every group matching the search, with the caller's member_status. */
  search(query: GroupSearch): Promise<GroupSearchPage>;
}

/** Who changes whose membership in which group; `actor` null: the operator (the command line). */
export interface MembershipChange {
  readonly group: number;
  readonly actor: string | null;
  readonly target: string;
  /**
   * How the group's row is held (groups/membership.ts: membershipLock): `exclusive` waits for every
   * other change of the group and makes them wait; `shared` (a change no other depends on) waits only
   * for exclusive ones.
   */
  readonly lock: 'exclusive' | 'shared';
}

/** What a membership change is decided from, read in the transaction that writes it (groups/membership.ts). */
export interface MembershipFacts {
  /** The actor's own status in the group (−1: none, or the operator). */
  readonly actorStatus: MemberStatus;
  /** The target's status in the group (−1: none). */
  readonly targetStatus: MemberStatus;
  /** Whether clubhouse knows the target (signed in once, or created by an import, sync or command). */
  readonly targetKnown: boolean;
  /** The group was synced from the directory (contract §11). */
  readonly directoryManaged: boolean;
  /** How many administrators (status 2) the group has. */
  readonly administrators: number;
}

/** A decision as the store needs it: the status to write (−1: none), or a refusal it hands back. */
export type MembershipVerdict = { readonly ok: true; readonly to: MemberStatus } | { readonly ok: false };

/** What changeMembership did: the facts, the decision, and the membership after it. */
export interface MembershipChanged<D> {
  readonly facts: MembershipFacts;
  readonly decision: D;
  /** The target's status after the transaction (−1: none), and since when (ms; null: not recorded). */
  readonly status: MemberStatus;
  readonly since: number | null;
  /** Whether a row was written. */
  readonly written: boolean;
}

/** One member of a group as its administrators see them. */
export interface GroupMember {
  readonly username: string;
  readonly status: StoredMemberStatus;
  /** When the membership took its status (ms); null for memberships older than the record. */
  readonly since: number | null;
}

export interface GroupMembers {
  /** The caller's own status in the group (only administrators may see the list). */
  readonly actorStatus: MemberStatus;
  readonly members: readonly GroupMember[];
}

/** What a text edit is decided from. */
export interface GroupAdministration {
  readonly actorStatus: MemberStatus;
  readonly directoryManaged: boolean;
}

/** The texts an administrator may edit (contract §13); absent fields are left as they are. */
export type GroupTexts = Partial<Pick<Group, 'description' | 'short_description' | 'activities'>>;

export interface GroupSearch {
  readonly username: string;
  /** `q` folded as the stored search text is (store/search-text.ts: foldForSearch); '' for every group. */
  readonly text: string;
  readonly type: GroupType | null;
  readonly offset: number;
  readonly limit: number;
}

/** One group as the search lists it. */
export interface GroupSearchHit {
  readonly id: number;
  readonly name: string;
  readonly short_description: string;
  readonly type: GroupType;
  readonly member_status: MemberStatus;
}

export interface GroupSearchPage {
  /** Every group matching, across pages; null when the page is past the last (nothing to count it by). */
  readonly count: number | null;
  readonly results: readonly GroupSearchHit[];
}

/**
 * JSON as the HTTP layer sends it: either a string of ASCII characters only (its length counts its
 * bytes; it may be sent as latin1) or its UTF-8 bytes, which the receiver must not change.
 */
export type JsonBytes = string | Buffer;

/**
 * How the answers of the group endpoints are written (groups/json.ts), handed to a store that keeps
 * them in memory (freshness/group-memory.ts). The store keeps each group's `group` JSON as opaque bytes and has the two answers
 * built from those pieces: it never knows the fields of an answer.
 */
export interface GroupJson {
  /** One group's JSON as kept: an element of a list, and what a detail is built from. */
  group(group: Group): JsonBytes;
  /** The JSON of listForMember: the kept JSON of the user's groups, in their order. */
  list(groups: readonly JsonBytes[]): JsonBytes;
  /** The JSON of detail: the group's kept JSON with the user's member_status. */
  detail(group: JsonBytes, memberStatus: MemberStatus): JsonBytes;
}
