// Groups and memberships on PostgreSQL, with the import of contract §4 in one transaction. Same
// behaviour as the SQLite GroupStore, row for row; bulk statements (unnest) keep big files fast.
import type pg from 'pg';
import { ImportConflictError, type ImportProblem } from '../import.ts';
import { isUniqueViolation, query, transaction } from './postgres-pool.ts';
import type { Group, GroupDetail, GroupStore, ImportData, Membership } from './types.ts';

const GROUP_COLUMNS = 'g.id, g.name, g.description, g.short_description, g.activities, g.type';
const NAME_CONSTRAINT = 'groups_name_key';
// An import may rewrite a big file; its statements get longer than a request's.
const IMPORT_TIMEOUT_MS = 300_000;

interface GroupRow {
  id: number;
  name: string;
  description: string;
  short_description: string;
  activities: string;
  type: number;
}

function toGroup(row: GroupRow): Group {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    short_description: row.short_description,
    activities: row.activities,
    type: row.type === 1 ? 1 : 0,
  };
}

/**
 * SQL of the two group endpoints, exported so a test can assert their plans. EXPLAIN (PostgreSQL
 * 15, 100 000 groups, 2 000 000 memberships, ANALYZEd) shows:
 * - listForMember: Nested Loop of a scan of memberships_pkey (Index Cond: username = $1, Filter:
 *   status IN (1, 2); a Bitmap Index Scan when the planner expects few rows, else an Index Scan
 *   that already yields group order) and Index Scan using groups_pkey (id = m.group_id). With the
 *   bitmap, a Sort of the caller's own handful of rows sits on top; no table is ever scanned.
 * - detail: Nested Loop Left Join of two primary-key lookups, Index Scan using groups_pkey
 *   (id = $2) and Index Scan using memberships_pkey (username = $1 AND group_id = $2).
 */
export const POSTGRES_GROUP_QUERIES = {
  listForMember: `SELECT ${GROUP_COLUMNS} FROM memberships m JOIN groups g ON g.id = m.group_id
    WHERE m.username = $1 AND m.status IN (1, 2) ORDER BY m.group_id`,
  detail: `SELECT ${GROUP_COLUMNS}, coalesce(m.status, -1) AS member_status FROM groups g
    LEFT JOIN memberships m ON m.username = $1 AND m.group_id = g.id WHERE g.id = $2`,
} as const;

const UPSERT_GROUPS = `INSERT INTO groups (id, name, description, short_description, activities, type)
  SELECT * FROM unnest($1::integer[], $2::text[], $3::text[], $4::text[], $5::text[], $6::smallint[])
  ON CONFLICT (id) DO UPDATE SET name = excluded.name, description = excluded.description,
  short_description = excluded.short_description, activities = excluded.activities, type = excluded.type`;

/** The columns of `groups` as the arrays UPSERT_GROUPS takes. */
function groupColumns(groups: readonly Group[]): unknown[] {
  return [
    groups.map((g) => g.id),
    groups.map((g) => g.name),
    groups.map((g) => g.description),
    groups.map((g) => g.short_description),
    groups.map((g) => g.activities),
    groups.map((g) => g.type),
  ];
}

type Run = (text: string, values?: unknown[]) => Promise<pg.QueryResult>;

/** Runs statements on `client` with a longer client-side deadline than a request's. */
function longRunner(client: pg.PoolClient): Run {
  // query_timeout per query is honoured by pg (client.js) though @types/pg does not declare it.
  return (text, values = []) =>
    client.query({ text, values, query_timeout: IMPORT_TIMEOUT_MS } as pg.QueryConfig);
}

/** Creates missing users (active) and upserts the memberships; every group must exist. */
async function writeMemberships(run: Run, memberships: readonly Membership[], now: number) {
  if (memberships.length === 0) return;
  const usernames = [...new Set(memberships.map((m) => m.username))];
  await run(
    `INSERT INTO users (username, active, created_at) SELECT u, true, $2 FROM unnest($1::text[]) AS u
     ON CONFLICT (username) DO NOTHING`,
    [usernames, now],
  );
  await run(
    `INSERT INTO memberships (username, group_id, status)
     SELECT * FROM unnest($1::text[], $2::integer[], $3::smallint[])
     ON CONFLICT (username, group_id) DO UPDATE SET status = excluded.status`,
    [memberships.map((m) => m.username), memberships.map((m) => m.group), memberships.map((m) => m.status)],
  );
}

/** Validated import data in one transaction, problems named by path as SQLite names them. */
async function importInto(client: pg.PoolClient, data: ImportData) {
  const run = longRunner(client);
  await run(`SET LOCAL statement_timeout = ${IMPORT_TIMEOUT_MS}`);
  await run(`SET LOCAL lock_timeout = ${IMPORT_TIMEOUT_MS}`);
  // Writers of groups (another import, `group add`) queue behind this one, so the name check below
  // cannot race them; readers are not held up.
  await run('LOCK TABLE groups IN SHARE ROW EXCLUSIVE MODE');
  const now = Date.now();
  const problems: ImportProblem[] = [];
  const ids = data.groups.map((g) => g.id);
  const names = data.groups.map((g) => g.name);
  // The name-parking trick (as in SQLite): move the names this file changes out of the way first,
  // so a file that swaps two names is not refused. A failure rolls back.
  await run(
    `UPDATE groups g SET name = 'import:' || gen_random_uuid() FROM unnest($1::integer[], $2::text[]) AS f(id, name)
      WHERE g.id = f.id AND g.name <> f.name`,
    [ids, names],
  );
  const taken = await run(
    `SELECT f.ord FROM unnest($1::integer[], $2::text[]) WITH ORDINALITY AS f(id, name, ord)
      JOIN groups g ON g.name = f.name AND g.id <> f.id ORDER BY f.ord`,
    [ids, names],
  );
  const refused = new Set(taken.rows.map((row) => Number(row['ord']) - 1));
  for (const index of refused) {
    problems.push({
      path: `groups[${index}].name`,
      reason: `"${data.groups[index]!.name}" is already the name of another group`,
    });
  }
  const groups = data.groups.filter((_, index) => !refused.has(index));
  if (groups.length > 0) await run(UPSERT_GROUPS, groupColumns(groups));
  if (data.users.length > 0) {
    // Sessions of users disabled here are revoked by applyImport, after the commit (contract §2).
    // A null flag creates the user active and leaves an existing one's flag alone (contract §4).
    const columns = [data.users.map((u) => u.username), data.users.map((u) => u.active)];
    await run(
      `INSERT INTO users (username, active, created_at)
        SELECT u, coalesce(a, true), $3 FROM unnest($1::text[], $2::boolean[]) AS f(u, a)
        ON CONFLICT (username) DO NOTHING`,
      [...columns, now],
    );
    await run(
      `UPDATE users SET active = f.a FROM unnest($1::text[], $2::boolean[]) AS f(u, a)
        WHERE users.username = f.u AND f.a IS NOT NULL AND users.active IS DISTINCT FROM f.a`,
      columns,
    );
  }
  const missing = await run(
    `SELECT f.ord FROM unnest($1::integer[]) WITH ORDINALITY AS f(id, ord)
      WHERE NOT EXISTS (SELECT 1 FROM groups g WHERE g.id = f.id) ORDER BY f.ord`,
    [data.memberships.map((m) => m.group)],
  );
  for (const row of missing.rows) {
    const index = Number(row['ord']) - 1;
    problems.push({
      path: `memberships[${index}].group`,
      reason: `no group with id ${data.memberships[index]!.group}`,
    });
  }
  // Throwing rolls the whole file back: an invalid file changes nothing (contract §4).
  if (problems.length > 0) throw new ImportConflictError(problems);
  await writeMemberships(run, data.memberships, now);
  return { groups: data.groups.length, users: data.users.length, memberships: data.memberships.length };
}

const nameTaken = (group: Group) =>
  new ImportConflictError([{ path: 'name', reason: `"${group.name}" is already the name of another group` }]);

/** The GroupStore of contract §3/§4 on PostgreSQL. */
export function postgresGroupStore(pool: pg.Pool): GroupStore {
  const list = async () =>
    (await query<GroupRow>(pool, `SELECT ${GROUP_COLUMNS} FROM groups g ORDER BY g.id`)).rows.map(toGroup);
  return {
    listForMember: async (username) =>
      (
        await query<GroupRow>(pool, POSTGRES_GROUP_QUERIES.listForMember, [username], 'groups-for-member')
      ).rows.map(toGroup),
    detail: async (id, username): Promise<GroupDetail | null> => {
      const { rows } = await query<GroupRow & { member_status: number }>(
        pool,
        POSTGRES_GROUP_QUERIES.detail,
        [username, id],
        'group-detail',
      );
      const row = rows[0];
      if (row === undefined) return null;
      const status = row.member_status;
      return { ...toGroup(row), member_status: status === 0 || status === 1 || status === 2 ? status : -1 };
    },
    list,
    upsertGroup: async (group) => {
      try {
        await query(pool, UPSERT_GROUPS, groupColumns([group]));
      } catch (err) {
        if (isUniqueViolation(err, NAME_CONSTRAINT)) throw nameTaken(group);
        throw err;
      }
    },
    removeGroup: async (id) =>
      ((await query(pool, 'DELETE FROM groups WHERE id = $1', [id])).rowCount ?? 0) > 0,
    setMembership: (membership) =>
      transaction(pool, async (client) => {
        // FOR KEY SHARE: the group cannot be deleted between this check and the write.
        const group = await client.query('SELECT 1 FROM groups WHERE id = $1 FOR KEY SHARE', [
          membership.group,
        ]);
        if (group.rowCount === 0) {
          throw new ImportConflictError([{ path: 'group', reason: `no group with id ${membership.group}` }]);
        }
        await writeMemberships((text, values) => client.query(text, values), [membership], Date.now());
      }),
    removeMembership: async (group, username) =>
      ((await query(pool, 'DELETE FROM memberships WHERE group_id = $1 AND username = $2', [group, username]))
        .rowCount ?? 0) > 0,
    importData: (data) => transaction(pool, (client) => importInto(client, data)),
    // One snapshot for the three reads, so an export is never half before and half after an import.
    exportData: () =>
      transaction(
        pool,
        async (client) => ({
          groups: (
            await client.query<GroupRow>(`SELECT ${GROUP_COLUMNS} FROM groups g ORDER BY g.id`)
          ).rows.map(toGroup),
          // COLLATE "C": code-point order, as SQLite's BINARY, whatever the database's locale.
          users: (
            await client.query<{ username: string; active: boolean }>(
              'SELECT username, active FROM users ORDER BY username COLLATE "C"',
            )
          ).rows.map((row) => ({ username: row.username, active: row.active })),
          memberships: (
            await client.query<{ group_id: number; username: string; status: number }>(
              'SELECT group_id, username, status FROM memberships ORDER BY group_id, username COLLATE "C"',
            )
          ).rows.map((row) => ({
            group: row.group_id,
            username: row.username,
            status: row.status as Membership['status'],
          })),
        }),
        'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
      ),
  };
}
