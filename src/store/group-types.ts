// The groups' seam (contract §3, §4): groups, memberships, the import's data, the store that keeps
// them, and how the answers kept in memory are written (GroupJson). Every implementation passes the
// contract tests; methods throw StoreUnavailableError when the store cannot answer.

export type MemberStatus = -1 | 0 | 1 | 2;
export type StoredMemberStatus = 0 | 1 | 2;
type GroupType = 0 | 1;

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
