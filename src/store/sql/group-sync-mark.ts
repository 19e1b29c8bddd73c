// The group sync's mark (contract §11): lets a run that finds the directory as the last writing run
// left it skip reading the state (every synced group and membership) and planning. Why it is sound:
// - It is written only by a transaction that wrote a plan and then, planning again against the state
//   it had just written (stateAfter: the state read, with the plan's rows written onto it, which is
//   what the database then holds, since the transaction excludes every other writer from before
//   its read), found nothing to write. It keeps the run's digest (everything the plan
//   depends on besides the state: the directory as read, the options, the rules' version), the
//   group generation at that point (what the commit makes the store's), and what the domain kept
//   of that no-change plan (SyncShortcut.record).
// - A later run reads the generation and the mark in its own transaction. The same digest is the
//   same inputs. The same generation is the same state: every insert, update or delete of a group
//   or membership, and every rename or deletion of a user, moves it in the writing transaction
//   (SQLite's triggers, migration 6), whoever writes, even by hand. Users created, or enabled and
//   disabled, do not move it, and need not: the planner reads users only to know which usernames of
//   the memberships it adds exist, and a no-change plan adds none. The planner is a pure function
//   of the two: the same plan again, replayed from the mark (SyncShortcut.replay).
// - A restored backup restores the mark with the generation it belongs to.
// An engine without a generation (PostgreSQL today: Dialect.groupGeneration) keeps no mark and
// plans every run in full. Giving it one also needs its writing transaction to keep every writer
// of memberships out from before the state is read (SQLite's IMMEDIATE transaction does), or
// stateAfter is not what it commits.
import type { GroupSyncState, GroupSyncWrites, SyncedGroup, SyncShortcut } from '../group-sync-types.ts';
import type { Membership } from '../group-types.ts';
import type { Dialect, Steps } from './driver.ts';

const MARK_KEY = 'group_sync_mark';

interface Mark {
  readonly digest: string;
  readonly generation: number;
  readonly recorded: string;
}

function* generation(sql: string): Steps<number> {
  const { rows } = yield { sql, params: [] };
  return Number(rows[0]?.['value']);
}

/** What the last writing run recorded, when its digest is `digest` and nothing was written since. */
export function* markedPlan(dialect: Dialect, digest: string): Steps<string | null> {
  if (dialect.groupGeneration === null) return null;
  const now = yield* generation(dialect.groupGeneration);
  const { rows } = yield { sql: 'SELECT value FROM meta WHERE key = $1', params: [MARK_KEY] };
  const value = rows[0]?.['value'];
  if (value === undefined) return null;
  const mark = JSON.parse(Buffer.from(value as Uint8Array).toString()) as Mark;
  return mark.digest === digest && mark.generation === now ? mark.recorded : null;
}

/**
 * What the store holds once `writes` are written onto `state` (sql/group-sync.ts's writePlan):
 * removed groups gone with their memberships, changed ones with their new fields, new ones added
 * (in id order, as read, and so are the ids in use); memberships removed, changed, added (an added
 * pair that exists takes the new status); created users known. Local groups are never written.
 * test/sync/state-after.test.ts checks it against what the store reads back after writing, on
 * every store.
 */
export function stateAfter(state: GroupSyncState, writes: GroupSyncWrites): GroupSyncState {
  const removed = new Set(writes.removeGroups);
  const changed = new Map(writes.changeGroups.map((group) => [group.id, group]));
  const synced: SyncedGroup[] = state.synced
    .filter((group) => !removed.has(group.id))
    .map((group) => changed.get(group.id) ?? group);
  synced.push(...writes.addGroups);
  synced.sort((a, b) => a.id - b.id);
  const pair = (m: Membership) => `${m.group}\u0000${m.username}`;
  const memberships = new Map<string, Membership>();
  for (const m of state.memberships) if (!removed.has(m.group)) memberships.set(pair(m), m);
  for (const m of writes.removeMemberships) memberships.delete(pair(m));
  for (const m of [...writes.changeMemberships, ...writes.addMemberships]) memberships.set(pair(m), m);
  return {
    synced,
    localNames: state.localNames,
    memberships: [...memberships.values()],
    users: new Set([...state.users, ...writes.createUsers]),
    ids: [...state.ids.filter((id) => !removed.has(id)), ...writes.addGroups.map((group) => group.id)].sort(
      (a, b) => a - b,
    ),
  };
}

/**
 * In the transaction that has just written a plan: plans again against what it wrote and, when that
 * plan writes nothing, records it with the digest and the generation (see the header).
 */
export function* markWritten<P>(
  dialect: Dialect,
  shortcut: SyncShortcut<P>,
  planAgain: () => P,
): Steps<void> {
  if (dialect.groupGeneration === null) return;
  const recorded = shortcut.record(planAgain());
  if (recorded === null) return;
  const mark: Mark = {
    digest: shortcut.digest,
    generation: yield* generation(dialect.groupGeneration),
    recorded,
  };
  yield {
    sql: 'INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    params: [MARK_KEY, Buffer.from(JSON.stringify(mark))],
  };
}
