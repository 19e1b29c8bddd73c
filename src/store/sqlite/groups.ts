// Groups on SQLite with an in-process cache (issue 14): the answers of GET /api/group/ and
// GET /api/group/{id} from memory, as the JSON the routes send, exactly as fresh as the database.
//
// The guarantee (contract §3, as sessions.ts for §2): a change to a group, a membership or a user
// committed by any connection — another worker, the clubhouse CLI, an import — is seen by the very
// next call in every process. How it is kept:
// - Every such change moves group_generation (triggers, migration 6), in the changing transaction.
// - Every entry in memory was read in a snapshot whose generation is `generation`: a fill reads the
//   generation in the same read transaction as its rows, and drops everything first if it moved.
// - Before answering from memory, a peek asks the commit watch (commit-watch.ts) whether anything
//   was committed since it last caught up, by anyone, this connection included; only then does it
//   read the generation (one row), and drops everything if it moved. Writes are rare: dropping the
//   whole cache is simpler than knowing what a change touched, and as exact.
// What is kept: each group's JSON as the caller's GroupJson writes it (opaque bytes: the list's
// element, and what a detail is built from), and each user's memberships (group ids and statuses,
// every status: the detail needs pending ones too). A list is built from the JSON of the user's
// member and administrator groups; a detail, from the group's JSON and the status. Both are bounded
// (oldest first out).
import type { DatabaseSync } from 'node:sqlite';
import type {
  Group,
  GroupCache,
  GroupDetail,
  GroupJson,
  GroupStore,
  JsonBytes,
  MemberStatus,
} from '../group-types.ts';
import { GROUP_QUERIES, sqlGroupStore } from '../sql/groups.ts';
import { GROUP_COLUMNS, toGroup, toGroupDetail } from '../sql/rows.ts';
import type { CommitWatch } from './commit-watch.ts';
import { sqliteSql } from './dialect.ts';
import { type SqliteDriver, transaction } from './driver.ts';

/**
 * Bounds of the cache, in approximate bytes of memory, and the most memberships kept per user. The
 * groups' budget holds 100 000 groups of about 300 bytes of JSON (the benchmark's database): the
 * eviction is oldest first, so a working set just over the budget, read in rotation, would miss on
 * every read (measured: 32 MiB left the benchmark's group list at a fifth of its cached rate).
 */
export const GROUP_CACHE_LIMITS = {
  groupBytes: 48 * 1024 * 1024,
  membershipBytes: 16 * 1024 * 1024,
  membershipsPerUser: 1000,
} as const;

export type GroupCacheLimits = { readonly [K in keyof typeof GROUP_CACHE_LIMITS]: number };

type Call = <T>(work: () => T) => Promise<T>;

/** The same bytes (a group unchanged since it was kept). */
const same = (a: JsonBytes, b: JsonBytes) =>
  typeof a === 'string' ? a === b : typeof b !== 'string' && a.equals(b);

/** A user's memberships: group ids ascending, and the status of each. */
interface Memberships {
  readonly ids: Int32Array;
  readonly statuses: Uint8Array;
}

/**
 * A Map bounded by the sum of its values' weights; the oldest entries leave first. Weights are
 * derived from the values (no wrapper object per entry), and eviction starts from the front only when
 * over budget: iterating a Map from its start skips every entry deleted since it was last compacted.
 */
class WeighedMap<K, V> {
  readonly #entries = new Map<K, V>();
  readonly #budget: number;
  readonly #weigh: (value: V) => number;
  #total = 0;
  constructor(budget: number, weigh: (value: V) => number) {
    this.#budget = budget;
    this.#weigh = weigh;
  }
  get(key: K): V | undefined {
    return this.#entries.get(key);
  }
  set(key: K, value: V): void {
    const old = this.#entries.get(key);
    if (old !== undefined) {
      this.#entries.delete(key);
      this.#total -= this.#weigh(old);
    }
    const weight = this.#weigh(value);
    if (weight > this.#budget) return;
    this.#entries.set(key, value);
    this.#total += weight;
    while (this.#total > this.#budget) {
      const [oldest, evicted] = this.#entries.entries().next().value as [K, V];
      this.#entries.delete(oldest);
      this.#total -= this.#weigh(evicted);
    }
  }
  clear(): void {
    this.#entries.clear();
    this.#total = 0;
  }
}

/** Every membership of a user with its group's columns, in group order (a prefix scan of the key). */
const USER_GROUPS = `SELECT m.group_id, m.status, ${GROUP_COLUMNS} FROM memberships m
  JOIN groups g ON g.id = m.group_id WHERE m.username = ? ORDER BY m.group_id LIMIT ?`;
const GROUP_BY_ID = `SELECT ${GROUP_COLUMNS} FROM groups g WHERE g.id = ?`;

function statusOf(memberships: Memberships, id: number): MemberStatus {
  const { ids, statuses } = memberships;
  let low = 0;
  let high = ids.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const at = ids[middle]!;
    if (at === id) return statuses[middle] as MemberStatus;
    if (at < id) low = middle + 1;
    else high = middle - 1;
  }
  return -1;
}

/**
 * The SQLite group store with its cache of the answers `json` writes; `call` maps SQLite errors the
 * way the other stores do.
 */
export function cachedSqliteGroups(
  db: DatabaseSync,
  driver: SqliteDriver,
  call: Call,
  watch: CommitWatch,
  json: GroupJson,
  limits: GroupCacheLimits = GROUP_CACHE_LIMITS,
): GroupStore & GroupCache {
  const shared = sqlGroupStore(driver);
  const readGeneration = db.prepare('SELECT value FROM group_generation');
  readGeneration.setReturnArrays(true);
  const userGroups = db.prepare(USER_GROUPS);
  const groupById = db.prepare(GROUP_BY_ID);
  // The shared layer's own queries, for users with more memberships than the cache keeps.
  const listQuery = db.prepare(sqliteSql(GROUP_QUERIES.listForMember));
  const detailQuery = db.prepare(sqliteSql(GROUP_QUERIES.detail));

  // Approximate bytes: the JSON's (its length, JsonBytes), and the string's (a Buffer's) and the Map
  // entry's own share.
  const groups = new WeighedMap<number, JsonBytes>(limits.groupBytes, (kept) =>
    typeof kept === 'string' ? kept.length + 48 : kept.length + 200,
  );
  const members = new WeighedMap<string, Memberships>(limits.membershipBytes, (m) => 5 * m.ids.length + 160);
  let generation = Number.NaN;
  let seenEpoch = Number.NaN;

  /** Makes `current` the generation of everything in memory, dropping what belongs to another. */
  const adopt = (current: number) => {
    if (current === generation) return;
    groups.clear();
    members.clear();
    generation = current;
  };
  const generationNow = () => Number((readGeneration.get() as unknown as unknown[])[0]);
  /** Before answering from memory: catch up with whatever was committed since we last looked. */
  const sync = () => {
    const epoch = watch.epoch();
    if (epoch === seenEpoch) return;
    adopt(generationNow());
    seenEpoch = epoch;
  };
  const keepGroup = (group: Group) => {
    const written = json.group(group);
    // Unchanged: left where it is (a re-insertion would only churn the Map).
    const kept = groups.get(group.id);
    if (kept === undefined || !same(kept, written)) groups.set(group.id, written);
  };

  /**
   * One read snapshot: the generation, then the user's memberships with their groups. Null when the
   * user has more memberships than the cache keeps (nothing is kept for them).
   */
  const readUser = (username: string) => {
    adopt(generationNow());
    const rows = userGroups.all(username, limits.membershipsPerUser + 1);
    if (rows.length > limits.membershipsPerUser) return null;
    const ids = new Int32Array(rows.length);
    const statuses = new Uint8Array(rows.length);
    const found = rows.map((row, i) => {
      ids[i] = Number(row['group_id']);
      statuses[i] = Number(row['status']);
      const group = toGroup(row);
      keepGroup(group);
      return { group, status: statuses[i] as MemberStatus };
    });
    members.set(username, { ids, statuses });
    return found;
  };
  const snapshot = <T>(work: () => T): Promise<T> => call(() => transaction(db, work, 'BEGIN'));

  return {
    ...shared,
    listForMember: (username) =>
      snapshot((): Group[] => {
        const found = readUser(username);
        if (found === null) return listQuery.all(username).map(toGroup);
        return found.filter(({ status }) => status === 1 || status === 2).map(({ group }) => group);
      }),
    detail: (id, username) =>
      snapshot((): GroupDetail | null => {
        const found = readUser(username);
        if (found === null) {
          const row = detailQuery.get(username, id);
          return row === undefined ? null : toGroupDetail(row);
        }
        const own = found.find(({ group }) => group.id === id);
        if (own !== undefined) return { ...own.group, member_status: own.status };
        const row = groupById.get(id);
        if (row === undefined) return null;
        const group = toGroup(row);
        keepGroup(group);
        return { ...group, member_status: -1 };
      }),
    peekList(username) {
      try {
        sync();
        const memberships = members.get(username);
        if (memberships === undefined) return undefined;
        const parts: JsonBytes[] = [];
        const { ids, statuses } = memberships;
        for (let i = 0; i < ids.length; i++) {
          if (statuses[i] === 0) continue;
          const kept = groups.get(ids[i]!);
          if (kept === undefined) return undefined;
          parts.push(kept);
        }
        return json.list(parts);
      } catch {
        return undefined; // the asynchronous path will report the failure
      }
    },
    peekDetail(id, username) {
      try {
        sync();
        const kept = groups.get(id);
        const memberships = members.get(username);
        if (kept === undefined || memberships === undefined) return undefined;
        return json.detail(kept, statusOf(memberships, id));
      } catch {
        return undefined;
      }
    },
  };
}
