// Groups on PostgreSQL with an in-process cache (issue 24): the answers of GET /api/group/ and
// GET /api/group/{id} from memory, as the JSON the routes send (group-memory.ts, shared with SQLite),
// exactly as fresh as the database, for any number of instances and the CLI.
//
// The guarantee (contract §3): a change to a group, a membership or a user committed anywhere before a
// request began is seen by that request. How it is kept:
// - Every such change moves group_generation (statement triggers, migration 7) in the changing
//   transaction. The bump updates one row, so the bumps are ordered as their transactions commit: a
//   snapshot that sees generation g sees every change that produced a generation up to g.
// - Everything in memory was read in a snapshot whose generation is `memory.generation`: a fill reads
//   the generation in the same statement as its rows. A fill at a newer generation drops everything
//   first; a fill at an older one keeps nothing.
// - An answer from memory is given only after a look (shared-look.ts) that began after the request
//   arrived has read the generation and dropped everything if it differed (in either direction: a
//   restored database may go back). Between that look and the answer, only fills at a newer
//   generation can change what is kept, and they are newer than the request.
// Outside a look's atOnce (the Fastify routes), the peeks answer nothing: the routes ask the store.

import type pg from 'pg';
import type { GroupCacheLimits, MembershipRow } from '../group-memory.ts';
import { GROUP_CACHE_LIMITS, GroupMemory } from '../group-memory.ts';
import type { Group, GroupCache, GroupDetail, GroupJson, GroupStore, MemberStatus } from '../group-types.ts';
import type { SharedLook } from '../shared-look.ts';
import type { SqlDriver } from '../sql/driver.ts';
import { sqlGroupStore } from '../sql/groups.ts';
import { GROUP_COLUMNS, toGroup } from '../sql/rows.ts';
import { query } from './driver.ts';
import type { PostgresLook } from './look.ts';

/** The generation and every membership of a user with its group's columns, in one snapshot. */
const USER_GROUPS = `SELECT gg.value AS generation, u.* FROM group_generation gg LEFT JOIN LATERAL (
    SELECT m.group_id, m.status, ${GROUP_COLUMNS} FROM memberships m JOIN groups g ON g.id = m.group_id
    WHERE m.username = $1 ORDER BY m.group_id LIMIT $2) u ON true`;
/** The generation and one group (null columns when there is none), in one snapshot. */
const GROUP_BY_ID = `SELECT gg.value AS generation, ${GROUP_COLUMNS} FROM group_generation gg
  LEFT JOIN groups g ON g.id = $1`;

/** The PostgreSQL group store with its cache of the answers `json` writes, made exact by `look`. */
export function cachedPostgresGroups(
  pool: pg.Pool,
  driver: SqlDriver,
  look: SharedLook,
  lookQuery: PostgresLook,
  json: GroupJson,
  limits: GroupCacheLimits = GROUP_CACHE_LIMITS,
): GroupStore & GroupCache {
  const shared = sqlGroupStore(driver);
  const memory = new GroupMemory(json, limits);
  // Fills only move the generation forward: an older snapshot must not replace a newer one.
  const fresh = (generation: number) => {
    if (generation < memory.generation) return false;
    if (generation > memory.generation || Number.isNaN(memory.generation)) memory.adopt(generation);
    return true;
  };
  // The look reads the generation alone.
  lookQuery.add({
    columns: () => '(SELECT value FROM group_generation) AS generation',
    values: () => [],
    apply: (row) => memory.adopt(Number(row['generation'])),
  });

  /** The user's memberships with their groups; null when there are more than the cache keeps. */
  const readUser = async (username: string): Promise<MembershipRow[] | null> => {
    const { rows } = await query(pool, USER_GROUPS, [username, limits.membershipsPerUser + 1], 'group-fill');
    const found = rows
      .filter((row) => row['group_id'] !== null)
      .map((row) => ({ group: toGroup(row), status: Number(row['status']) as MemberStatus }));
    if (found.length > limits.membershipsPerUser) return null;
    if (fresh(Number(rows[0]?.['generation']))) memory.keepUser(username, found);
    return found;
  };

  return {
    ...shared,
    listForMember: async (username) => {
      const found = await readUser(username);
      if (found === null) return shared.listForMember(username);
      return found.filter(({ status }) => status === 1 || status === 2).map(({ group }) => group);
    },
    detail: async (id, username): Promise<GroupDetail | null> => {
      const found = await readUser(username);
      if (found === null) return shared.detail(id, username);
      const own = found.find(({ group }) => group.id === id);
      if (own !== undefined) return { ...own.group, member_status: own.status };
      const { rows } = await query(pool, GROUP_BY_ID, [id], 'group-fill-one');
      const row = rows[0]!;
      if (row['id'] === null) return null;
      const group: Group = toGroup(row);
      if (fresh(Number(row['generation']))) memory.keepGroup(group);
      return { ...group, member_status: -1 };
    },
    peekList: (username) => (look.open ? memory.list(username) : undefined),
    peekDetail: (id, username) => (look.open ? memory.detail(id, username) : undefined),
  };
}
