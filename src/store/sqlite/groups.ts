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
// What is kept, and how the answers are built from it, is group-memory.ts's (shared with PostgreSQL).
import type { DatabaseSync } from 'node:sqlite';
import { GROUP_CACHE_LIMITS, type GroupCacheLimits, GroupMemory } from '../group-memory.ts';
import type { Group, GroupCache, GroupDetail, GroupJson, GroupStore, MemberStatus } from '../group-types.ts';
import { GROUP_QUERIES, sqlGroupStore } from '../sql/groups.ts';
import { GROUP_COLUMNS, toGroup, toGroupDetail } from '../sql/rows.ts';
import type { CommitWatch } from './commit-watch.ts';
import { sqliteSql } from './dialect.ts';
import { type SqliteDriver, transaction } from './driver.ts';

type Call = <T>(work: () => T) => Promise<T>;

/** Every membership of a user with its group's columns, in group order (a prefix scan of the key). */
const USER_GROUPS = `SELECT m.group_id, m.status, ${GROUP_COLUMNS} FROM memberships m
  JOIN groups g ON g.id = m.group_id WHERE m.username = ? ORDER BY m.group_id LIMIT ?`;
const GROUP_BY_ID = `SELECT ${GROUP_COLUMNS} FROM groups g WHERE g.id = ?`;

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

  const memory = new GroupMemory(json, limits);
  let seenEpoch = Number.NaN;

  const generationNow = () => Number((readGeneration.get() as unknown as unknown[])[0]);
  /** Before answering from memory: catch up with whatever was committed since we last looked. */
  const sync = () => {
    const epoch = watch.epoch();
    if (epoch === seenEpoch) return;
    memory.adopt(generationNow());
    seenEpoch = epoch;
  };

  /**
   * One read snapshot: the generation, then the user's memberships with their groups. Null when the
   * user has more memberships than the cache keeps (nothing is kept for them).
   */
  const readUser = (username: string) => {
    memory.adopt(generationNow());
    const rows = userGroups.all(username, limits.membershipsPerUser + 1);
    if (rows.length > limits.membershipsPerUser) return null;
    const found = rows.map((row) => ({ group: toGroup(row), status: Number(row['status']) as MemberStatus }));
    memory.keepUser(username, found);
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
        memory.keepGroup(group);
        return { ...group, member_status: -1 };
      }),
    peekList(username) {
      try {
        sync();
        return memory.list(username);
      } catch {
        return undefined; // the asynchronous path will report the failure
      }
    },
    peekDetail(id, username) {
      try {
        sync();
        return memory.detail(id, username);
      } catch {
        return undefined;
      }
    },
  };
}
