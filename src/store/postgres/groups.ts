// Groups on PostgreSQL with the process's group memory (freshness/group-memory.ts): the answers of
// GET /api/group/ and GET /api/group/{id} as the JSON the routes send, for any number of instances
// and the CLI. Every change they depend on moves group_generation and logs what it touched in the
// changing transaction (statement triggers, migrations 7 and 13); the bump updates one row, so the
// bumps are ordered as their transactions commit: a snapshot that sees generation g sees every change
// and every log entry up to g. A catch-up reads the generation and the log after its position
// (catch-up.ts), and each fill reads the generation in the same statement as its rows.
import type pg from 'pg';
import type { AnswerWindow } from '../freshness/gate.ts';
import { GROUP_LOG, type GroupChange, groupLogPage } from '../freshness/group-log.ts';
import type { GroupMemoryLimits, MembershipRow } from '../freshness/group-memory.ts';
import { GroupMemory } from '../freshness/group-memory.ts';
import type { Group, GroupDetail, GroupJson, GroupStore, MemberStatus } from '../group-types.ts';
import type { SqlDriver } from '../sql/driver.ts';
import { sqlGroupStore } from '../sql/groups.ts';
import { GROUP_COLUMNS, toGroup } from '../sql/rows.ts';
import type { GroupMemoryAnswers } from '../types.ts';
import type { PostgresCatchUp } from './catch-up.ts';
import { query } from './driver.ts';

/** The generation and every membership of a user with its group's columns, in one snapshot. */
const USER_GROUPS = `SELECT gg.value AS generation, u.* FROM group_generation gg LEFT JOIN LATERAL (
    SELECT m.group_id, m.status, ${GROUP_COLUMNS} FROM memberships m JOIN groups g ON g.id = m.group_id
    WHERE m.username = $1 ORDER BY m.group_id LIMIT $2) u ON true`;
/** The generation and one group (null columns when there is none), in one snapshot. */
const GROUP_BY_ID = `SELECT gg.value AS generation, ${GROUP_COLUMNS} FROM group_generation gg
  LEFT JOIN groups g ON g.id = $1`;

/** The group change log's head: the generation, and the mark at $n (catch-up.ts). */
const headColumns = (n: number) => `(SELECT value FROM group_generation) AS group_generation,
    (SELECT min(at)::text FROM group_changes WHERE generation = $${n}) AS group_log_mark_at`;
/**
 * The group change log's head, marks and rows after $n up to the head (none while $n < 0; rows
 * beyond the head are left by a generation gone backwards), in the catch-up's snapshot; the rows as
 * a JSON array of [generation, username, group_id], generation ascending.
 */
const logColumns = (n: number) => `${headColumns(n)},
    (SELECT min(generation) FROM group_changes) AS group_log_first,
    (SELECT min(at)::text FROM group_changes
      WHERE generation = (SELECT value FROM group_generation)) AS group_log_last_mark,
    (SELECT json_agg(json_build_array(c.generation, c.username, c.group_id) ORDER BY c.generation)
      FROM (SELECT generation, username, group_id FROM group_changes
        WHERE $${n}::bigint >= 0 AND generation > $${n}
          AND generation <= (SELECT value FROM group_generation) ORDER BY generation
        LIMIT ${GROUP_LOG.pageRows + 1}) c) AS group_log_rows`;

const textOrNull = (value: unknown) => (value === null ? null : String(value));

/** The PostgreSQL group store with memory of the answers `json` writes, caught up by `catchUp`. */
export function postgresGroupMemory(
  pool: pg.Pool,
  driver: SqlDriver,
  catchUp: PostgresCatchUp,
  window: AnswerWindow,
  json: GroupJson,
  limits: GroupMemoryLimits,
): { readonly store: GroupStore; readonly answers: GroupMemoryAnswers } {
  const shared = sqlGroupStore(driver);
  const memory = new GroupMemory(json, window, limits);
  const reader = memory.log;
  catchUp.add({
    head: headColumns,
    page: logColumns,
    position: () => reader.seq,
    newest: 'group_generation',
    apply: (row, whole, asked) => {
      const generation = Number(row['group_generation']);
      const markAt = textOrNull(row['group_log_mark_at']);
      if (!whole) {
        // The generation where the reader stands: no entry after it, and the newest is the one at it.
        reader.apply(groupLogPage(asked, { generation, first: null, markAt, lastMark: markAt }, []));
        return;
      }
      const rows = ((row['group_log_rows'] ?? []) as [number, string | null, number | null][]).map(
        ([generation, username, group]): GroupChange => ({ generation, username, group }),
      );
      const head = {
        generation,
        first: row['group_log_first'] === null ? null : Number(row['group_log_first']),
        markAt,
        lastMark: textOrNull(row['group_log_last_mark']),
      };
      reader.apply(groupLogPage(asked, head, rows));
    },
  });

  /** The user's memberships with their groups; null when there are more than memory keeps. */
  const readUser = async (username: string): Promise<MembershipRow[] | null> => {
    const { rows } = await query(pool, USER_GROUPS, [username, limits.membershipsPerUser + 1], 'group-fill');
    const found = rows
      .filter((row) => row['group_id'] !== null)
      .map((row) => ({ group: toGroup(row), status: Number(row['status']) as MemberStatus }));
    if (found.length > limits.membershipsPerUser) return null;
    memory.keepUser(username, found, Number(rows[0]?.['generation']));
    return found;
  };

  return {
    store: {
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
        memory.keepGroup(group, Number(row['generation']));
        return { ...group, member_status: -1 };
      },
    },
    answers: memory,
  };
}
