// The in-memory answers of the group endpoints, the same on every engine: each group's JSON as the
// caller's GroupJson writes it (opaque bytes: the list's element, and what a detail is built from),
// and each user's memberships (group ids and statuses, every status: the detail needs pending ones
// too). A list is built from the JSON of the user's member and administrator groups; a detail, from
// the group's JSON and the status. Both are bounded (oldest first out), and answer only while their
// window is open (gate.ts: right after a catch-up).
//
// Exactness (docs/freshness.md): every change an answer depends on (a group, a membership, a user
// renamed or deleted), whoever commits it, moves the database's group generation in the changing
// transaction and logs what it touched under the generation it moved to (triggers; group-log.ts).
// - What leaves: a catch-up reads the log after its position (change-log.ts, the reader sessions
//   use too) and drops what each entry names: a user's memberships and built list; a group's JSON,
//   and with it every built list holding it (`#unchanged`: a count per change). When the log
//   cannot prove it holds every change since (a hole, a generation gone backwards, entries pruned
//   unread), everything is dropped.
// - What enters: a fill reads the generation in the same snapshot as its rows, and is kept only if
//   that is not older than the reader's position. An older one may predate a change the reader has
//   already dropped for; a newer one is followed by a catch-up that reads every change after the
//   position, those after the fill's own snapshot included.
// A change to one user's membership thus leaves every other user's answers, and every group's JSON,
// in memory.
import type { Group, GroupJson, JsonBytes, MemberStatus } from '../group-types.ts';
import { ChangeLogReader } from './change-log.ts';
import type { AnswerWindow } from './gate.ts';
import type { GroupChange } from './group-log.ts';

/**
 * Bounds of the cache, in approximate bytes of memory, and the most memberships kept per user. The
 * groups' budget holds 100 000 groups of about 300 bytes of JSON (the benchmark's database): the
 * eviction is oldest first, so a working set just over the budget, read in rotation, would miss on
 * every read (measured: 32 MiB left the benchmark's group list at a fifth of its cached rate).
 */
export const GROUP_MEMORY_LIMITS = {
  groupBytes: 48 * 1024 * 1024,
  membershipBytes: 16 * 1024 * 1024,
  membershipsPerUser: 1000,
  // The users' built lists: 10 000 users of 20 groups (the benchmark's) take 52 MiB.
  listBytes: 64 * 1024 * 1024,
} as const;

/** The bounds; `listBytes` may be left out (GROUP_MEMORY_LIMITS'). */
export type GroupMemoryLimits = {
  readonly [K in Exclude<keyof typeof GROUP_MEMORY_LIMITS, 'listBytes'>]: number;
} & {
  readonly listBytes?: number;
};

/** A kept list's own share beside its bytes: the Buffer, the BuiltList and the Map entry. */
const LIST_OVERHEAD = 240;

/**
 * A group's JSON as kept: its bytes in a chunk of the arena, or inside a kept list that holds the
 * same bytes (then the arena's copy is let go: see GroupMemory.#share), and whether they are ASCII
 * (then read back as a string, else as the UTF-8 Buffer GroupJson wrote).
 */
interface Kept {
  chunk: Buffer;
  start: number;
  end: number;
  /** Whether `chunk` is a kept list's bytes rather than the arena's. */
  inList: boolean;
  readonly ascii: boolean;
  /** The newest generation these bytes were read at. */
  readAt: number;
}

const ARENA_CHUNK_BYTES = 1024 * 1024;

/**
 * The groups' JSON off the V8 heap: appended to 1 MiB chunks, never moved (a chunk is freed when no
 * Kept points into it). 100 000 groups of about 300 bytes were as many strings on the heap: 30 MiB
 * more for every full collection to mark, and for the heap's growth to be sized on.
 */
class JsonArena {
  #chunk: Buffer | null = null;
  #used = 0;
  /** Bytes appended since the last clear (kept or not). */
  appended = 0;

  put(json: JsonBytes, readAt: number): Kept {
    const ascii = typeof json === 'string';
    const length = json.length;
    if (this.#chunk === null || this.#used + length > this.#chunk.length) {
      this.#chunk = Buffer.allocUnsafeSlow(Math.max(ARENA_CHUNK_BYTES, length));
      this.#used = 0;
    }
    const chunk = this.#chunk;
    const start = this.#used;
    if (ascii) chunk.write(json, start, 'latin1');
    else json.copy(chunk, start);
    this.#used += length;
    this.appended += length;
    return { chunk, start, end: start + length, inList: false, ascii, readAt };
  }

  clear(): void {
    this.#chunk = null;
    this.#used = 0;
    this.appended = 0;
  }
}

/** The kept JSON as GroupJson reads it: a string when ASCII, else its UTF-8 bytes (a view: not to be changed). */
const bytesOf = (kept: Kept): JsonBytes =>
  kept.ascii
    ? kept.chunk.toString('latin1', kept.start, kept.end)
    : kept.chunk.subarray(kept.start, kept.end);

/** The same bytes (a group unchanged since it was kept). */
const same = (kept: Kept, json: JsonBytes) =>
  typeof json === 'string'
    ? kept.ascii && kept.end - kept.start === json.length && bytesOf(kept) === json
    : !kept.ascii && json.equals(kept.chunk.subarray(kept.start, kept.end));

/** A user's memberships: group ids ascending, and the status of each. */
interface Memberships {
  readonly ids: Int32Array;
  readonly statuses: Uint8Array;
  /** The generation they were read at. */
  readonly readAt: number;
}

/** A user's list answer, the memberships it was built from, and when its groups were last checked. */
interface BuiltList {
  readonly of: Memberships;
  readonly bytes: Buffer;
  /** The count of group changes when it was built, or last found to hold no changed group. */
  checkedAt: number;
}

/** One membership row as a store read it: the group, and the user's status in it. */
export interface MembershipRow {
  readonly group: Group;
  readonly status: MemberStatus;
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
  readonly #whenFull: 'evict' | 'refuse';
  #total = 0;
  /**
   * `whenFull`: 'evict' makes room by dropping the oldest entries; 'refuse' keeps what is there and
   * does not keep the new entry (for values that can be rebuilt from other entries: a working set
   * read in rotation that is just over the budget then still hits on most reads, where oldest-first
   * would miss on every one).
   */
  constructor(budget: number, weigh: (value: V) => number, whenFull: 'evict' | 'refuse' = 'evict') {
    this.#budget = budget;
    this.#weigh = weigh;
    this.#whenFull = whenFull;
  }
  get(key: K): V | undefined {
    return this.#entries.get(key);
  }
  /** The entries, oldest first (a copy: set() may be called while walking it). */
  entries(): [K, V][] {
    return [...this.#entries];
  }
  set(key: K, value: V): void {
    const old = this.#entries.get(key);
    if (old !== undefined) {
      this.#entries.delete(key);
      this.#total -= this.#weigh(old);
    }
    const weight = this.#weigh(value);
    if (weight > this.#budget) return;
    if (this.#whenFull === 'refuse' && this.#total + weight > this.#budget) return;
    this.#entries.set(key, value);
    this.#total += weight;
    while (this.#total > this.#budget) {
      const [oldest, evicted] = this.#entries.entries().next().value as [K, V];
      this.#entries.delete(oldest);
      this.#total -= this.#weigh(evicted);
    }
  }
  /** Whether an entry of `weight` would be kept now. */
  fits(weight: number): boolean {
    return this.#whenFull === 'evict' ? weight <= this.#budget : this.#total + weight <= this.#budget;
  }
  delete(key: K): void {
    const old = this.#entries.get(key);
    if (old === undefined) return;
    this.#entries.delete(key);
    this.#total -= this.#weigh(old);
  }
  clear(): void {
    this.#entries.clear();
    this.#total = 0;
  }
}

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

/** The groups and memberships as the answers' JSON, kept exact by the group change log. */
export class GroupMemory {
  readonly #json: GroupJson;
  readonly #window: AnswerWindow;
  readonly limits: GroupMemoryLimits;
  // Approximate bytes: the JSON's (in the arena), and the Kept's and the Map entry's own share.
  readonly #groups: WeighedMap<number, Kept>;
  readonly #arena = new JsonArena();
  readonly #members: WeighedMap<string, Memberships>;
  /**
   * Each user's list answer as sent, built once from the two maps above and kept until a change
   * names the user or one of the groups it holds (a list assembled per request joined 20 strings of
   * 5 KiB and sent them as a new string: the allocation, the copy and the collector's share of it
   * were most of what the list cost beyond the bare server). A Buffer: node writes it as it is, beside the headers. It answers only while
   * the memberships it was built from are kept (`of`). Bounded by `listBytes`, refusing rather than
   * evicting when full (a list is rebuilt from what is kept).
   */
  readonly #lists: WeighedMap<string, BuiltList>;
  /**
   * Group changes (a group's JSON dropped, replaced or kept anew), counted; and for each group the
   * count at its last change. A list built before a change of one of its groups is built again; a
   * list built since the last change of any group answers at once, and one that holds none of the
   * groups changed since it was checked is stamped as checked now. One number per list, where a
   * reverse index (group → the users whose list holds it) cost 37 MiB for 10 000 lists of 20 groups.
   */
  #groupChanges = 0;
  readonly #changedAt = new Map<number, number>();
  /** The reader of the group change log: what it reads leaves memory, its position decides what may enter. */
  readonly log: ChangeLogReader<GroupChange> = new ChangeLogReader<GroupChange>({
    forget: (change) => this.#forget(change),
    clear: () => this.#clear(),
  });

  constructor(json: GroupJson, window: AnswerWindow, limits: GroupMemoryLimits = GROUP_MEMORY_LIMITS) {
    this.#json = json;
    this.#window = window;
    this.limits = limits;
    this.#groups = new WeighedMap(limits.groupBytes, (kept) => kept.end - kept.start + 64);
    this.#members = new WeighedMap(limits.membershipBytes, (m) => 5 * m.ids.length + 160);
    this.#lists = new WeighedMap(
      limits.listBytes ?? GROUP_MEMORY_LIMITS.listBytes,
      (list) => list.bytes.length + LIST_OVERHEAD,
      'refuse',
    );
  }

  /** Keeps a group read at `generation` (nothing when the log reader has read beyond it). */
  keepGroup(group: Group, generation: number): void {
    if (this.#admits(generation)) this.#keepGroup(group.id, this.#json.group(group), generation);
  }

  /**
   * Keeps every membership of `username` (in group order) and their groups, read at `generation`
   * (nothing when the log reader has read beyond it).
   */
  keepUser(username: string, rows: readonly MembershipRow[], generation: number): void {
    if (!this.#admits(generation)) return;
    const ids = new Int32Array(rows.length);
    const statuses = new Uint8Array(rows.length);
    const written = rows.map(({ group, status }, i) => {
      ids[i] = group.id;
      statuses[i] = status;
      return this.#json.group(group);
    });
    const memberships: Memberships = { ids, statuses, readAt: generation };
    this.#members.set(username, memberships);
    this.#dropList(username);
    // The list is built now, from the JSON just written, and the groups it holds are kept in its
    // bytes: they enter memory once (an arena copy let go later would still count at the peak).
    const parts = written.filter((_, i) => statuses[i] !== 0);
    const list = this.#json.list(parts);
    const bytes =
      this.#members.get(username) === memberships && this.#lists.fits(list.length + LIST_OVERHEAD)
        ? typeof list === 'string'
          ? Buffer.from(list, 'latin1')
          : list
        : null;
    // GroupJson's list is the groups' JSON in order, one byte between them, one before and after
    // (json.ts): each group's bytes are then at `at`. Any other length, and none is read from there.
    const shared =
      bytes !== null &&
      bytes.length === parts.reduce((sum, part) => sum + part.length + 1, parts.length === 0 ? 2 : 1);
    let at = 1;
    rows.forEach(({ group, status }, i) => {
      const json = written[i]!;
      if (!shared || status === 0) this.#keepGroup(group.id, json, generation);
      else {
        this.#keepGroup(group.id, json, generation, bytes, at);
        at += json.length + 1;
      }
    });
    if (bytes !== null) this.#lists.set(username, { of: memberships, bytes, checkedAt: this.#groupChanges });
  }

  /** The JSON of the user's list; undefined when the window is shut or something it needs is not kept. */
  list(username: string): JsonBytes | undefined {
    if (!this.#window.open) return undefined;
    const memberships = this.#members.get(username);
    if (memberships === undefined) return undefined;
    const built = this.#lists.get(username);
    if (built?.of === memberships && this.#unchanged(built)) return built.bytes;
    const parts: JsonBytes[] = [];
    const { ids, statuses } = memberships;
    for (let i = 0; i < ids.length; i++) {
      if (statuses[i] === 0) continue;
      const kept = this.#groups.get(ids[i]!);
      if (kept === undefined) return undefined;
      parts.push(bytesOf(kept));
    }
    const list = this.#json.list(parts);
    if (built !== undefined) this.#dropList(username, built);
    // Full: answered as built, not kept (a Buffer made only to be dropped would cost its copy for nothing).
    if (!this.#lists.fits(list.length + LIST_OVERHEAD)) return list;
    // A string is ASCII (JsonBytes): its latin1 bytes are the same characters.
    const bytes = typeof list === 'string' ? Buffer.from(list, 'latin1') : list;
    const kept: BuiltList = { of: memberships, bytes, checkedAt: this.#groupChanges };
    this.#lists.set(username, kept);
    this.#share(kept);
    return bytes;
  }

  /** The JSON of a group's detail for the user; undefined when the window is shut or either is not kept. */
  detail(id: number, username: string): JsonBytes | undefined {
    if (!this.#window.open) return undefined;
    const kept = this.#groups.get(id);
    const memberships = this.#members.get(username);
    if (kept === undefined || memberships === undefined) return undefined;
    return this.#json.detail(bytesOf(kept), statusOf(memberships, id));
  }

  /**
   * A fill read at `generation` may be kept: the log reader has read nothing beyond it. The first
   * fill before any catch-up starts the reader at its generation (memory holds nothing older).
   */
  #admits(generation: number): boolean {
    const read = { epoch: '', seq: generation };
    this.log.startAt(read);
    return this.log.admits(read);
  }

  /**
   * Drops what a change logged at `generation` names, unless it was read at that generation or later
   * (a fill beyond the reader's position: it holds the change already).
   */
  #forget({ generation, username, group }: GroupChange): void {
    if (username === null && group === null) {
      this.#clear();
      return;
    }
    if (username !== null && (this.#members.get(username)?.readAt ?? -1) < generation) {
      this.#members.delete(username);
      this.#dropList(username);
    }
    if (group !== null && (this.#groups.get(group)?.readAt ?? -1) < generation) {
      this.#groups.delete(group);
      this.#groupChanged(group);
    }
  }

  #clear(): void {
    this.#groups.clear();
    this.#members.clear();
    this.#lists.clear();
    this.#changedAt.clear();
    this.#arena.clear();
  }

  /**
   * The groups of a list just kept read their bytes from it: the list holds each group's JSON as
   * it is kept (GroupJson's list is the groups' JSON in order, joined; each is compared before it is
   * shared), so the arena's copy is no longer referenced and its chunk is freed with its last Kept.
   * Kept lists and the groups' JSON were two copies of the same bytes (in the benchmark 52 and 26
   * MiB); a group read by no kept list keeps its arena copy.
   */
  #share(built: BuiltList): void {
    const { ids, statuses } = built.of;
    const { bytes } = built;
    // After the list's opening byte; each group then a separator.
    let at = 1;
    for (let i = 0; i < ids.length; i++) {
      if (statuses[i] === 0) continue;
      const kept = this.#groups.get(ids[i]!);
      if (kept === undefined) return;
      const length = kept.end - kept.start;
      if (bytes.compare(kept.chunk, kept.start, kept.end, at, at + length) !== 0) return;
      kept.chunk = bytes;
      kept.start = at;
      kept.end = at + length;
      kept.inList = true;
      at += length + 1;
    }
  }

  /**
   * Forgets `username`'s kept list (`built`, when the caller has it): the groups that read their
   * bytes from it get their own copy in the arena again, so a dropped list is not held by them.
   */
  #dropList(username: string, built = this.#lists.get(username)): void {
    if (built === undefined) return;
    this.#lists.delete(username);
    const { ids, statuses } = built.of;
    for (let i = 0; i < ids.length; i++) {
      if (statuses[i] === 0) continue;
      const kept = this.#groups.get(ids[i]!);
      if (kept === undefined || kept.chunk !== built.bytes) continue;
      const moved = this.#arena.put(built.bytes.subarray(kept.start, kept.end), kept.readAt);
      kept.chunk = moved.chunk;
      kept.start = moved.start;
      kept.end = moved.end;
      kept.inList = false;
    }
  }

  /** No list built before now holds this group's JSON as it is: it is built again. */
  #groupChanged(id: number): void {
    this.#changedAt.set(id, ++this.#groupChanges);
  }

  /** Whether none of the groups `built` holds has changed since it was built (or last checked). */
  #unchanged(built: BuiltList): boolean {
    if (built.checkedAt === this.#groupChanges) return true;
    const { ids, statuses } = built.of;
    for (let i = 0; i < ids.length; i++) {
      if (statuses[i] === 0) continue;
      if ((this.#changedAt.get(ids[i]!) ?? -1) > built.checkedAt) return false;
    }
    built.checkedAt = this.#groupChanges;
    return true;
  }

  /**
   * Keeps a group's JSON as `written`, read at `readAt`: inside `list` at `at` when given (a list
   * being kept, which holds these bytes there), else in the arena.
   */
  #keepGroup(id: number, written: JsonBytes, readAt: number, list: Buffer | null = null, at = 0): void {
    const kept = this.#groups.get(id);
    const inList = list !== null;
    // Unchanged: left where it is (a re-insertion would only churn the Map), and as new as this read;
    // read from the list if it was in the arena.
    if (kept !== undefined && same(kept, written)) {
      if (readAt > kept.readAt) kept.readAt = readAt;
      if (inList && !kept.inList) {
        kept.chunk = list;
        kept.start = at;
        kept.end = at + written.length;
        kept.inList = true;
      }
      return;
    }
    this.#groups.set(
      id,
      inList
        ? {
            chunk: list,
            start: at,
            end: at + written.length,
            inList,
            ascii: typeof written === 'string',
            readAt,
          }
        : this.#arena.put(written, readAt),
    );
    // Other bytes (read after a change the reader has not caught up with yet), or none kept (evicted:
    // a list may have been built from older ones): no list built from them answers.
    this.#groupChanged(id);
    if (this.#arena.appended > 2 * this.limits.groupBytes) this.#compact();
  }

  /**
   * Copies the groups still kept in the arena into a fresh one, once what was appended (evicted and
   * replaced groups included) reaches twice the budget: the old chunks are then freed with the last
   * Kept that points into them. A group read from a kept list stays there.
   */
  #compact(): void {
    const kept = this.#groups.entries();
    this.#arena.clear();
    for (const [id, old] of kept)
      if (old.inList) this.#groups.set(id, old);
      else
        this.#groups.set(
          id,
          this.#arena.put(old.ascii ? bytesOf(old) : old.chunk.subarray(old.start, old.end), old.readAt),
        );
  }
}
