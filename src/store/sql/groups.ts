// The GroupStore of contract §3/§4 on either SQL engine: the two reads of the request path, the
// admin's writes (clubhouse group …, member …) and the export. The import is import-data.ts.
import { CONFLICT, conflict } from '../errors.ts';
import { freeGroupIds } from '../group-ids.ts';
import type { Group, GroupStore, ImportData, Membership, NewGroup } from '../group-types.ts';
import { MAX_GROUP_ID } from '../limits.ts';
import { change, type Dialect, type SqlDriver, type Steps, select } from './driver.ts';
import { fillSearchText, searchGroups, searchTextMissing } from './group-search.ts';
import { importData, writeMemberships } from './import-data.ts';
import { changeMembership, changeTexts, members } from './memberships.ts';
import { GROUP_COLUMNS, toExportedUser, toGroup, toGroupDetail, toMembership } from './rows.ts';

/**
 * SQL of the two group endpoints, exported so that tests can assert their plans on each engine
 * (test/store/sqlite-plans.test.ts, test/store/postgres.test.ts).
 * - listForMember: a prefix scan of the memberships primary key (username, group_id), already in
 *   id order, joined to groups by primary key.
 * - detail: two primary-key lookups.
 */
export const GROUP_QUERIES = {
  listForMember: `SELECT ${GROUP_COLUMNS} FROM memberships m JOIN groups g ON g.id = m.group_id
    WHERE m.username = $1 AND m.status IN (1, 2) ORDER BY m.group_id`,
  detail: `SELECT ${GROUP_COLUMNS}, coalesce(m.status, -1) AS member_status FROM groups g
    LEFT JOIN memberships m ON m.username = $1 AND m.group_id = g.id WHERE g.id = $2`,
} as const;

const INSERT_GROUP = `INSERT INTO groups (id, name, description, short_description, activities, type)
  VALUES ($1, $2, $3, $4, $5, $6)`;
const UPDATE_ON_ID = `ON CONFLICT (id) DO UPDATE SET name = excluded.name, description = excluded.description,
  short_description = excluded.short_description, activities = excluded.activities, type = excluded.type`;

const groupParams = (g: Group) => [g.id, g.name, g.description, g.short_description, g.activities, g.type];

const allGroups = (): Steps<Group[]> =>
  select({ sql: `SELECT ${GROUP_COLUMNS} FROM groups g ORDER BY g.id`, params: [] }, (rows) =>
    rows.map(toGroup),
  );

/** `clubhouse group add`: an insert that never overwrites, whatever another admin does meanwhile. */
function* addGroup(dialect: Dialect, group: NewGroup): Steps<Group> {
  // Another add or import waits for this transaction, so the next free id cannot race.
  if (dialect.lockGroups !== null) yield { sql: dialect.lockGroups, params: [] };
  let id = group.id;
  if (id === null) {
    // contract §11: the one rule for a new group's id (group-ids.ts), over every id in use.
    const { rows } = yield { sql: 'SELECT id FROM groups ORDER BY id', params: [] };
    const free = freeGroupIds(
      rows.map((row) => Number(row['id'])),
      1,
    );
    if (free === null) throw conflict('id', CONFLICT.noFreeId(MAX_GROUP_ID));
    id = free[0]!;
  }
  const added = { ...group, id };
  const { changes } = yield { sql: `${INSERT_GROUP} ON CONFLICT DO NOTHING`, params: groupParams(added) };
  if (changes > 0) return added;
  const { rows } = yield { sql: 'SELECT 1 FROM groups WHERE id = $1', params: [id] };
  throw rows.length > 0
    ? conflict('id', CONFLICT.idTaken(id))
    : conflict('name', CONFLICT.nameTaken(group.name));
}

function* upsertGroup(dialect: Dialect, group: Group): Steps<void> {
  try {
    yield { sql: `${INSERT_GROUP} ${UPDATE_ON_ID}`, params: groupParams(group) };
  } catch (err) {
    // The id is the conflict target, so only the name can be taken.
    if (dialect.isUniqueViolation(err)) throw conflict('name', CONFLICT.nameTaken(group.name));
    throw err;
  }
}

function* setMembership(dialect: Dialect, membership: Membership): Steps<void> {
  // The group cannot be deleted between this check and the write.
  const { rows } = yield {
    sql: `SELECT 1 FROM groups WHERE id = $1${dialect.keyShare}`,
    params: [membership.group],
  };
  if (rows.length === 0) throw conflict('group', CONFLICT.noSuchGroup(membership.group));
  yield* writeMemberships(dialect, [membership], Date.now());
}

/** One snapshot for the three reads, so an export is never half before and half after an import. */
function* exportData(dialect: Dialect): Steps<ImportData> {
  const groups = yield* allGroups();
  const users = yield* select(
    { sql: `SELECT username, active FROM users ORDER BY username${dialect.binaryOrder}`, params: [] },
    (rows) => rows.map(toExportedUser),
  );
  const memberships = yield* select(
    {
      sql: `SELECT group_id, username, status FROM memberships ORDER BY group_id, username${dialect.binaryOrder}`,
      params: [],
    },
    (rows) => rows.map(toMembership),
  );
  return { groups, users, memberships };
}

/** The GroupStore over `driver`. */
export function sqlGroupStore({ run, dialect }: SqlDriver): GroupStore {
  const changed = async (sql: string, params: unknown[]) => (await run(change({ sql, params }))) > 0;
  return {
    listForMember: (username) =>
      run(
        select({ sql: GROUP_QUERIES.listForMember, params: [username], name: 'groups-for-member' }, (rows) =>
          rows.map(toGroup),
        ),
      ),
    detail: (id, username) =>
      run(
        select({ sql: GROUP_QUERIES.detail, params: [username, id], name: 'group-detail' }, (rows) =>
          rows[0] === undefined ? null : toGroupDetail(rows[0]),
        ),
      ),
    list: () => run(allGroups()),
    addGroup: (group) => run(addGroup(dialect, group), 'write'),
    upsertGroup: (group) => run(upsertGroup(dialect, group)),
    removeGroup: (id) => changed('DELETE FROM groups WHERE id = $1', [id]),
    setMembership: (membership) => run(setMembership(dialect, membership), 'write'),
    removeMembership: (group, username) =>
      changed('DELETE FROM memberships WHERE group_id = $1 AND username = $2', [group, username]),
    importData: (data) => run(importData(dialect, data, Date.now()), 'bulk'),
    exportData: () => run(exportData(dialect), 'snapshot'),
    changeMembership: (change, decide) => run(changeMembership(dialect, change, decide, Date.now()), 'write'),
    members: (group, actor, status) => run(members(dialect, group, actor, status), 'snapshot'),
    changeTexts: (group, actor, texts, refuse) =>
      run(changeTexts(dialect, group, actor, texts, refuse), 'write'),
    search: async (query) => {
      // A group new or edited since the last search is folded and indexed first (group-search.ts),
      // a chunk a transaction, so that other writers wait for one chunk at most.
      if (await run(searchTextMissing())) {
        for (let after: number | null = 0; after !== null; ) {
          after = await run(fillSearchText(dialect, after), 'write');
        }
      }
      return run(searchGroups(dialect, query), 'snapshot');
    },
  };
}
