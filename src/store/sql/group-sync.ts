// The group sync's transaction (contract §11) and its lease, on either SQL engine. One transaction
// reads the state, hands it to the planner (groups/sync/plan.ts, pure and synchronous) and writes what it
// answers with set-based statements, as the import does (import-data.ts): a sync of 100 000
// memberships costs a handful of statements. Only rows that change are written: a plan that changes
// nothing issues no write at all, so no trigger fires and SQLite's group generation does not move.
// Where the engine allows it, a run with the same inputs as the last writing run, on a store
// unchanged since, answers from that run's mark without reading the state (group-sync-mark.ts).
import type { ApplyOptions, GroupSyncState, GroupSyncStore, GroupSyncWrites } from '../group-sync-types.ts';
import type { Column, Dialect, SqlDriver, Steps } from './driver.ts';
import { markedPlan, markWritten, stateAfter } from './group-sync-mark.ts';
import { MEMBERSHIP, upsertMemberships } from './import-data.ts';
import { checkLease, sqlLeases } from './lease.ts';
import { GROUP_COLUMNS, toGroup, toMembership } from './rows.ts';

const GROUP: readonly Column[] = [
  ['id', 'integer'],
  ['name', 'text'],
  ['description', 'text'],
  ['short_description', 'text'],
  ['activities', 'text'],
  ['type', 'smallint'],
  ['external_id', 'text'],
];
const ID: readonly Column[] = [['id', 'integer']];
const USERNAME: readonly Column[] = [['username', 'text']];

/** Reads what the planner needs: every group (ids ascending), the synced groups' memberships, the known usernames. */
function* readState(dialect: Dialect, usernames: readonly string[]): Steps<GroupSyncState> {
  const { rows: groupRows } = yield {
    sql: `SELECT ${GROUP_COLUMNS}, g.external_id FROM groups g ORDER BY g.id`,
    params: [],
  };
  const synced = [];
  const localNames = new Set<string>();
  const ids: number[] = [];
  for (const row of groupRows) {
    const group = toGroup(row);
    ids.push(group.id);
    const externalId = row['external_id'];
    if (externalId === null) localNames.add(group.name);
    else synced.push({ ...group, externalId: String(externalId) });
  }
  const { rows: membershipRows } = yield {
    sql: `SELECT m.group_id, m.username, m.status FROM memberships m JOIN groups g ON g.id = m.group_id
      WHERE g.external_id IS NOT NULL`,
    params: [],
  };
  const users = new Set<string>();
  if (usernames.length > 0) {
    const { rows } = yield {
      sql: `SELECT u.username FROM ${dialect.rows(1, USERNAME)} JOIN users u ON u.username = f.username`,
      params: dialect.bulk(
        USERNAME,
        usernames.map((username) => [username]),
      ),
    };
    for (const row of rows) users.add(String(row['username']));
  }
  return { synced, localNames, memberships: membershipRows.map(toMembership), users, ids };
}

const groupRow = (g: GroupSyncWrites['addGroups'][number]) => [
  g.id,
  g.name,
  g.description,
  g.short_description,
  g.activities,
  g.type,
  g.externalId,
];

/** Writes a plan's rows, removals first: a name or pair they free may be taken by what follows. */
function* writePlan(dialect: Dialect, writes: GroupSyncWrites, now: number): Steps<void> {
  if (writes.removeGroups.length > 0) {
    yield {
      sql: `DELETE FROM groups WHERE id IN (SELECT f.id FROM ${dialect.rows(1, ID)})`,
      params: dialect.bulk(
        ID,
        writes.removeGroups.map((id) => [id]),
      ),
    };
  }
  if (writes.removeMemberships.length > 0) {
    yield {
      sql: `DELETE FROM memberships WHERE (username, group_id) IN
        (SELECT f.username, f.group_id FROM ${dialect.rows(1, MEMBERSHIP)})`,
      params: dialect.bulk(
        MEMBERSHIP,
        writes.removeMemberships.map((m) => [m.username, m.group, m.status]),
      ),
    };
  }
  if (writes.changeGroups.length > 0) {
    const rows = dialect.bulk(GROUP, writes.changeGroups.map(groupRow));
    // UNIQUE is checked row by row: park the names that change first, so that two synced groups
    // that swap names (a rename in the directory) are not refused.
    yield {
      sql: `UPDATE groups AS g SET name = 'sync:' || ${dialect.randomText} FROM ${dialect.rows(1, GROUP)}
        WHERE g.id = f.id AND g.name <> f.name`,
      params: rows,
    };
    yield {
      sql: `UPDATE groups AS g SET name = f.name, description = f.description,
        short_description = f.short_description, activities = f.activities, type = f.type
        FROM ${dialect.rows(1, GROUP)} WHERE g.id = f.id`,
      params: rows,
    };
  }
  if (writes.addGroups.length > 0) {
    yield {
      sql: `INSERT INTO groups (id, name, description, short_description, activities, type, external_id)
        SELECT f.id, f.name, f.description, f.short_description, f.activities, f.type, f.external_id
        FROM ${dialect.rows(1, GROUP)}`,
      params: dialect.bulk(GROUP, writes.addGroups.map(groupRow)),
    };
  }
  if (writes.createUsers.length > 0) {
    // WHERE true: SQLite's parser needs it between INSERT … SELECT and ON CONFLICT.
    yield {
      sql: `INSERT INTO users (username, active, created_at) SELECT f.username, TRUE, $1
        FROM ${dialect.rows(2, USERNAME)} WHERE true ON CONFLICT (username) DO NOTHING`,
      params: [
        now,
        ...dialect.bulk(
          USERNAME,
          writes.createUsers.map((username) => [username]),
        ),
      ],
    };
  }
  if (writes.changeMemberships.length > 0) {
    yield {
      sql: `UPDATE memberships AS m SET status = f.status FROM ${dialect.rows(1, MEMBERSHIP)}
        WHERE m.username = f.username AND m.group_id = f.group_id`,
      params: dialect.bulk(
        MEMBERSHIP,
        writes.changeMemberships.map((m) => [m.username, m.group, m.status]),
      ),
    };
  }
  if (writes.addMemberships.length > 0) {
    // An administrator's `member set` on a synced group between the read and this write: the
    // directory's answer stands (contract §11: synced memberships follow the directory).
    yield* upsertMemberships(dialect, writes.addMemberships);
  }
}

/** Whether writePlan would issue any statement for `writes`. */
const writesAny = (writes: GroupSyncWrites) => Object.values(writes).some((rows) => rows.length > 0);

function* apply<P extends { readonly writes: GroupSyncWrites }>(
  dialect: Dialect,
  usernames: () => readonly string[],
  plan: (state: GroupSyncState) => P,
  options: ApplyOptions<P>,
  now: number,
): Steps<P> {
  if (options.lease !== null) yield* checkLease(dialect, options.lease);
  // Another import, `group add` or sync queues behind this one, so the names read stay true.
  if (options.write && dialect.lockGroups !== null) yield { sql: dialect.lockGroups, params: [] };
  const { shortcut } = options;
  const recorded = shortcut === null ? null : yield* markedPlan(dialect, shortcut.digest);
  if (shortcut !== null && recorded !== null) return shortcut.replay(recorded);
  const state = yield* readState(dialect, usernames());
  const planned = plan(state);
  if (!options.write || !writesAny(planned.writes)) return planned;
  yield* writePlan(dialect, planned.writes, now);
  if (shortcut !== null) yield* markWritten(dialect, shortcut, () => plan(stateAfter(state, planned.writes)));
  return planned;
}

/** The GroupSyncStore over `driver`. */
export function sqlGroupSyncStore(driver: SqlDriver): GroupSyncStore {
  const { run, dialect } = driver;
  return {
    apply: (usernames, plan, options) =>
      run(apply(dialect, usernames, plan, options, Date.now()), options.write ? 'bulk' : 'snapshot'),
    replayable: async (digest) => (await run(markedPlan(dialect, digest), 'snapshot')) !== null,
    ...sqlLeases(driver),
  };
}
