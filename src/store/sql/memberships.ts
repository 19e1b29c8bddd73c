// Joining and running a group (contract §13) on either SQL engine: a membership changed, the members
// listed, the texts edited. Each change is one transaction that first locks the group's row, so
// every change of one group's memberships runs after the last one committed, on PostgreSQL (the row
// lock; READ COMMITTED then reads what the previous holder committed) as on SQLite (the write lock of
// the IMMEDIATE transaction): two administrators demoting each other leave one. The rules are the
// domain's (groups/membership.ts), handed in as `decide`: the store reads the facts and writes the
// answer. Every write moves group_generation and logs its user by trigger (migrations 6, 7 and 13),
// so every process's group memory drops that user's answers before its next one (docs/freshness.md). `since` is written here; a
// writer that leaves it out (an import, the sync, a merge, a SQL shell) has it set by trigger
// (migration 11).
import type {
  GroupAdministration,
  GroupDetail,
  GroupMember,
  GroupMembers,
  GroupTexts,
  MemberStatus,
  MembershipChange,
  MembershipChanged,
  MembershipFacts,
  MembershipVerdict,
  StoredMemberStatus,
} from '../group-types.ts';
import type { Dialect, Row, Steps } from './driver.ts';
import { GROUP_COLUMNS, toGroupDetail } from './rows.ts';

const statusOf = (value: unknown): MemberStatus => {
  const status = value === null || value === undefined ? -1 : Number(value);
  return status === 0 || status === 1 || status === 2 ? status : -1;
};
const sinceOf = (value: unknown) => (value === null || value === undefined ? null : Number(value));

/** A locking clause of `dialect` on one table of the statement (SQLite's write lock needs none). */
const lockOf = (clause: string, table: string) => (clause === '' ? '' : `${clause} OF ${table}`);

/** The clause that locks the group's row for a change of `lock` (MembershipChange). */
const groupLock = (dialect: Dialect, lock: MembershipChange['lock']) =>
  lock === 'exclusive' ? dialect.forUpdate : dialect.keyShare;

/** Locks the group's row until the transaction ends; null when there is no such group. */
function* lockGroup(
  dialect: Dialect,
  group: number,
  lock: MembershipChange['lock'] = 'exclusive',
): Steps<Row | null> {
  const { rows } = yield {
    sql: `SELECT external_id FROM groups WHERE id = $1${groupLock(dialect, lock)}`,
    params: [group],
  };
  return rows[0] ?? null;
}

/** The status of `username` in `group` (−1: none). */
function* statusIn(group: number, username: string): Steps<MemberStatus> {
  const { rows } = yield {
    sql: 'SELECT status FROM memberships WHERE group_id = $1 AND username = $2',
    params: [group, username],
  };
  return statusOf(rows[0]?.['status']);
}

/**
 * Changes one membership as `decide` answers, in one transaction (run it in 'write' mode). Few
 * statements while the group's row is locked (the facts in one, the write in one). An exclusive
 * change waits for every other change of the group; shared ones (asks) run side by side, and wait
 * only for exclusive ones.
 */
export function* changeMembership<D extends MembershipVerdict>(
  dialect: Dialect,
  change: MembershipChange,
  decide: (facts: MembershipFacts) => D,
  now: number,
): Steps<MembershipChanged<D> | null> {
  const { group, actor, target, lock } = change;
  // The group's row, and the target's user row kept from being deleted (a merge) until the write.
  const { rows: both } = yield {
    sql: `SELECT g.external_id FROM groups g JOIN users u ON u.username = $2 WHERE g.id = $1${lockOf(groupLock(dialect, lock), 'g')}${lockOf(dialect.keyShare, 'u')}`,
    params: [group, target],
  };
  const locked = both[0] ?? (yield* lockGroup(dialect, group, lock));
  if (locked === null) return null;
  const { rows } = yield {
    sql: `SELECT (SELECT count(*) FROM memberships WHERE group_id = $1 AND status = 2) AS administrators,
        t.status AS target_status, t.since AS target_since,
        (SELECT status FROM memberships WHERE group_id = $1 AND username = $3) AS actor_status
      FROM (SELECT 1 AS one) o LEFT JOIN memberships t ON t.group_id = $1 AND t.username = $2`,
    params: [group, target, actor ?? ''],
  };
  const row = rows[0]!;
  const targetStatus = statusOf(row['target_status']);
  const facts: MembershipFacts = {
    actorStatus: actor === null ? -1 : statusOf(row['actor_status']),
    targetStatus,
    targetKnown: both.length > 0,
    directoryManaged: locked['external_id'] !== null,
    administrators: Number(row['administrators']),
  };
  const decision = decide(facts);
  if (!decision.ok || decision.to === targetStatus) {
    return { facts, decision, status: targetStatus, since: sinceOf(row['target_since']), written: false };
  }
  const to = decision.to;
  if (to === -1) {
    yield { sql: 'DELETE FROM memberships WHERE group_id = $1 AND username = $2', params: [group, target] };
    return { facts, decision, status: -1, since: null, written: true };
  }
  if (targetStatus === -1) {
    // Only the operator adds a user clubhouse does not know (as an import does, contract §4).
    if (!facts.targetKnown) {
      yield {
        sql: 'INSERT INTO users (username, active, created_at) VALUES ($1, TRUE, $2) ON CONFLICT (username) DO NOTHING',
        params: [target, now],
      };
    }
    const { changes } = yield {
      sql: `INSERT INTO memberships (username, group_id, status, since) VALUES ($1, $2, $3, $4)
        ON CONFLICT (username, group_id) DO NOTHING`,
      params: [target, group, to, now],
    };
    if (changes === 0) {
      // Under a shared lock, the same ask committed first (the same person asking twice at once):
      // the membership is what that one wrote.
      const { rows: now } = yield {
        sql: 'SELECT status, since FROM memberships WHERE group_id = $1 AND username = $2',
        params: [group, target],
      };
      const status = statusOf(now[0]?.['status']);
      return { facts, decision, status, since: sinceOf(now[0]?.['since']), written: false };
    }
  } else {
    yield {
      sql: 'UPDATE memberships SET status = $3, since = $4 WHERE group_id = $1 AND username = $2',
      params: [group, target, to, now],
    };
  }
  return { facts, decision, status: to, since: now, written: true };
}

/** The members of a group and the actor's own status, in one snapshot; null: no such group. */
export function* members(
  dialect: Dialect,
  group: number,
  actor: string,
  status: StoredMemberStatus | null,
): Steps<GroupMembers | null> {
  const { rows: found } = yield { sql: 'SELECT 1 FROM groups WHERE id = $1', params: [group] };
  if (found.length === 0) return null;
  const actorStatus = yield* statusIn(group, actor);
  // contract §13: requests first, then by username (code-point order on both engines).
  const { rows } = yield {
    sql: `SELECT username, status, since FROM memberships WHERE group_id = $1${status === null ? '' : ' AND status = $2'}
      ORDER BY CASE WHEN status = 0 THEN 0 ELSE 1 END, username${dialect.binaryOrder}`,
    params: status === null ? [group] : [group, status],
  };
  const list: GroupMember[] = rows.map((row) => ({
    username: String(row['username']),
    status: Number(row['status']) as StoredMemberStatus,
    since: sinceOf(row['since']),
  }));
  return { actorStatus, members: list };
}

/** The columns an edit may write, by field: nothing else ever reaches the SQL text. */
const TEXT_COLUMNS = {
  description: 'description',
  short_description: 'short_description',
  activities: 'activities',
} as const;

/** Edits a group's texts if `refuse` allows it, in one transaction (run it in 'write' mode). */
export function* changeTexts<R>(
  dialect: Dialect,
  group: number,
  actor: string,
  texts: GroupTexts,
  refuse: (facts: GroupAdministration) => R | null,
): Steps<{ readonly refused: R } | { readonly group: GroupDetail } | null> {
  const locked = yield* lockGroup(dialect, group);
  if (locked === null) return null;
  const refused = refuse({
    actorStatus: yield* statusIn(group, actor),
    directoryManaged: locked['external_id'] !== null,
  });
  if (refused !== null) return { refused };
  const fields = (Object.keys(TEXT_COLUMNS) as (keyof typeof TEXT_COLUMNS)[]).filter(
    (field) => texts[field] !== undefined,
  );
  if (fields.length > 0) {
    yield {
      sql: `UPDATE groups SET ${fields.map((field, i) => `${TEXT_COLUMNS[field]} = $${i + 2}`).join(', ')} WHERE id = $1`,
      params: [group, ...fields.map((field) => texts[field])],
    };
  }
  const { rows } = yield {
    sql: `SELECT ${GROUP_COLUMNS}, coalesce(m.status, -1) AS member_status FROM groups g
      LEFT JOIN memberships m ON m.username = $1 AND m.group_id = g.id WHERE g.id = $2`,
    params: [actor, group],
  };
  return { group: toGroupDetail(rows[0]!) };
}
