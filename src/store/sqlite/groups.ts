// Groups on SQLite with the process's group memory (freshness/group-memory.ts): the answers of
// GET /api/group/ and GET /api/group/{id} as the JSON the routes send. Every change they depend on
// moves group_generation and logs what it touched (triggers, migrations 6 and 13) in the changing
// transaction, whoever commits it; a catch-up reads the generation and the log after its position
// (freshness.ts decides when: the commit watch), and each fill reads the generation in the same read
// transaction as its rows.
import type { DatabaseSync } from 'node:sqlite';
import type { AnswerWindow } from '../freshness/gate.ts';
import { GROUP_LOG, type GroupChange, groupLogPage } from '../freshness/group-log.ts';
import { GroupMemory, type GroupMemoryLimits, type MembershipRow } from '../freshness/group-memory.ts';
import type { Group, GroupDetail, GroupJson, GroupStore, MemberStatus } from '../group-types.ts';
import { GROUP_QUERIES, sqlGroupStore } from '../sql/groups.ts';
import { GROUP_COLUMNS, toGroup, toGroupDetail } from '../sql/rows.ts';
import type { GroupMemoryAnswers } from '../types.ts';
import { sqliteSql } from './dialect.ts';
import { call, type SqliteDriver, transaction } from './driver.ts';

/** Every membership of a user with its group's columns, in group order (a prefix scan of the key). */
const USER_GROUPS = `SELECT m.group_id, m.status, ${GROUP_COLUMNS} FROM memberships m
  JOIN groups g ON g.id = m.group_id WHERE m.username = ? ORDER BY m.group_id LIMIT ?`;
const GROUP_BY_ID = `SELECT ${GROUP_COLUMNS} FROM groups g WHERE g.id = ?`;
/** The group change log's head and its marks (the least `at` of a generation) at ?1 and at the head. */
const LOG_HEAD = `SELECT (SELECT value FROM group_generation) AS generation,
  (SELECT min(generation) FROM group_changes) AS first,
  (SELECT min(at) FROM group_changes WHERE generation = ?1) AS mark_at,
  (SELECT min(at) FROM group_changes WHERE generation = (SELECT value FROM group_generation)) AS last_mark`;
/** The rows after the position up to the head read first: later ones wait for the next page. */
const LOG_ROWS = `SELECT generation, username, group_id FROM group_changes
  WHERE generation > ? AND generation <= ? ORDER BY generation LIMIT ${GROUP_LOG.pageRows + 1}`;

/** The SQLite group store with memory of the answers `json` writes, its answers, and its catch-up. */
export function sqliteGroupMemory(
  db: DatabaseSync,
  driver: SqliteDriver,
  window: AnswerWindow,
  json: GroupJson,
  limits: GroupMemoryLimits,
): { readonly store: GroupStore; readonly answers: GroupMemoryAnswers; readonly catchUp: () => void } {
  const shared = sqlGroupStore(driver);
  const readGeneration = db.prepare('SELECT value FROM group_generation');
  readGeneration.setReturnArrays(true);
  const userGroups = db.prepare(USER_GROUPS);
  const groupById = db.prepare(GROUP_BY_ID);
  const logHead = db.prepare(LOG_HEAD);
  const logRows = db.prepare(LOG_ROWS);
  // The shared layer's own queries, for users with more memberships than memory keeps.
  const listQuery = db.prepare(sqliteSql(GROUP_QUERIES.listForMember));
  const detailQuery = db.prepare(sqliteSql(GROUP_QUERIES.detail));

  const memory = new GroupMemory(json, window, limits);
  const generationNow = () => Number((readGeneration.get() as unknown as unknown[])[0]);
  const markOf = (at: unknown) => (at === null ? null : String(at));
  /** Reads the log after the reader's position and applies it. */
  const catchUp = () => {
    const after = memory.log.seq;
    const head = logHead.get(after)!;
    const generation = Number(head['generation']);
    const rows =
      after < 0
        ? []
        : logRows.all(after, generation).map(
            (row): GroupChange => ({
              generation: Number(row['generation']),
              username: row['username'] === null ? null : String(row['username']),
              group: row['group_id'] === null ? null : Number(row['group_id']),
            }),
          );
    const first = head['first'] === null ? null : Number(head['first']);
    memory.log.apply(
      groupLogPage(
        after,
        { generation, first, markAt: markOf(head['mark_at']), lastMark: markOf(head['last_mark']) },
        rows,
      ),
    );
  };

  /**
   * Inside one read snapshot: the user's memberships with their groups, kept at the snapshot's
   * generation. Null when the user has more memberships than memory keeps (nothing is kept for them).
   */
  const readUser = (username: string, generation: number): MembershipRow[] | null => {
    const rows = userGroups.all(username, limits.membershipsPerUser + 1);
    if (rows.length > limits.membershipsPerUser) return null;
    const found = rows.map((row) => ({ group: toGroup(row), status: Number(row['status']) as MemberStatus }));
    memory.keepUser(username, found, generation);
    return found;
  };
  const snapshot = <T>(work: (generation: number) => T): Promise<T> =>
    call(() => transaction(db, () => work(generationNow()), 'BEGIN'));

  return {
    store: {
      ...shared,
      listForMember: (username) =>
        snapshot((generation): Group[] => {
          const found = readUser(username, generation);
          if (found === null) return listQuery.all(username).map(toGroup);
          return found.filter(({ status }) => status === 1 || status === 2).map(({ group }) => group);
        }),
      detail: (id, username) =>
        snapshot((generation): GroupDetail | null => {
          const found = readUser(username, generation);
          if (found === null) {
            const row = detailQuery.get(username, id);
            return row === undefined ? null : toGroupDetail(row);
          }
          const own = found.find(({ group }) => group.id === id);
          if (own !== undefined) return { ...own.group, member_status: own.status };
          const row = groupById.get(id);
          if (row === undefined) return null;
          const group = toGroup(row);
          memory.keepGroup(group, generation);
          return { ...group, member_status: -1 };
        }),
    },
    answers: memory,
    catchUp,
  };
}
