// The import of contract §4 on either SQL engine: one transaction, set-based statements (a big file
// costs a handful of statements, not one per row), every conflict with what is stored named by
// the entry's path, and nothing written unless there is none.
import { CONFLICT, ImportConflictError, type ImportProblem } from '../errors.ts';
import type { ImportData, Membership } from '../group-types.ts';
import type { Column, Dialect, Row, Steps } from './driver.ts';

const ID_NAME: readonly Column[] = [
  ['id', 'integer'],
  ['name', 'text'],
];
const GROUP: readonly Column[] = [
  ...ID_NAME,
  ['description', 'text'],
  ['short_description', 'text'],
  ['activities', 'text'],
  ['type', 'smallint'],
];
const USER: readonly Column[] = [
  ['username', 'text'],
  ['active', 'boolean'],
];
/** The columns of a membership as the bulk statements pass them (import-data.ts, group-sync.ts). */
export const MEMBERSHIP: readonly Column[] = [
  ['username', 'text'],
  ['group_id', 'integer'],
  ['status', 'smallint'],
];

/** The 0-based positions (`ord` is 1-based) of the rows a statement answered. */
const positions = (rows: Row[]) => rows.map((row) => Number(row['ord']) - 1);

/** Creates missing users (active) and upserts the memberships; every group must exist. */
export function* writeMemberships(
  dialect: Dialect,
  memberships: readonly Membership[],
  now: number,
): Steps<void> {
  if (memberships.length === 0) return;
  const usernames = [...new Set(memberships.map((m) => m.username))].map((username) => [username]);
  yield {
    // WHERE true: SQLite's parser needs it between INSERT … SELECT and ON CONFLICT.
    sql: `INSERT INTO users (username, active, created_at) SELECT f.username, TRUE, $1
      FROM ${dialect.rows(2, [USER[0]!])} WHERE true ON CONFLICT (username) DO NOTHING`,
    params: [now, ...dialect.bulk([USER[0]!], usernames)],
  };
  yield* upsertMemberships(dialect, memberships);
}

/** Inserts the memberships, or sets the status of those that exist; their users and groups must. */
export function* upsertMemberships(dialect: Dialect, memberships: readonly Membership[]): Steps<void> {
  yield {
    sql: `INSERT INTO memberships (username, group_id, status) SELECT f.username, f.group_id, f.status
      FROM ${dialect.rows(1, MEMBERSHIP)} WHERE true
      ON CONFLICT (username, group_id) DO UPDATE SET status = excluded.status`,
    params: dialect.bulk(
      MEMBERSHIP,
      memberships.map((m) => [m.username, m.group, m.status]),
    ),
  };
}

/** Applies validated import data; run it in one transaction (a throw rolls everything back). */
export function* importData(
  dialect: Dialect,
  data: ImportData,
  now: number,
): Steps<{ groups: number; users: number; memberships: number }> {
  // Writers of groups (another import, `group add`) queue behind this one, so the name check below
  // cannot race them; readers are not held up.
  if (dialect.lockGroups !== null) yield { sql: dialect.lockGroups, params: [] };
  const problems: ImportProblem[] = [];
  const idNames = dialect.bulk(
    ID_NAME,
    data.groups.map((g) => [g.id, g.name]),
  );
  // UNIQUE is checked row by row: move the names this file changes out of the way first, so that a
  // file that swaps two names is not refused.
  yield {
    sql: `UPDATE groups AS g SET name = 'import:' || ${dialect.randomText} FROM ${dialect.rows(1, ID_NAME)}
      WHERE g.id = f.id AND g.name <> f.name`,
    params: idNames,
  };
  const taken = yield {
    sql: `SELECT f.ord FROM ${dialect.rows(1, ID_NAME)} JOIN groups g ON g.name = f.name AND g.id <> f.id
      ORDER BY f.ord`,
    params: idNames,
  };
  const refused = new Set(positions(taken.rows));
  for (const index of refused) {
    problems.push({ path: `groups[${index}].name`, reason: CONFLICT.nameTaken(data.groups[index]!.name) });
  }
  const groups = data.groups.filter((_, index) => !refused.has(index));
  if (groups.length > 0) {
    yield {
      sql: `INSERT INTO groups (id, name, description, short_description, activities, type)
        SELECT f.id, f.name, f.description, f.short_description, f.activities, f.type
        FROM ${dialect.rows(1, GROUP)} WHERE true
        ON CONFLICT (id) DO UPDATE SET name = excluded.name, description = excluded.description,
        short_description = excluded.short_description, activities = excluded.activities, type = excluded.type`,
      params: dialect.bulk(
        GROUP,
        groups.map((g) => [g.id, g.name, g.description, g.short_description, g.activities, g.type]),
      ),
    };
  }
  if (data.users.length > 0) {
    // Sessions of users disabled here are revoked by applyImport, after the commit (contract §2).
    // A null flag creates the user active and leaves an existing one's flag alone (contract §4).
    const users = data.users.map((u) => [u.username, u.active]);
    yield {
      sql: `INSERT INTO users (username, active, created_at) SELECT f.username, coalesce(f.active, TRUE), $1
        FROM ${dialect.rows(2, USER)} WHERE true ON CONFLICT (username) DO NOTHING`,
      params: [now, ...dialect.bulk(USER, users)],
    };
    yield {
      sql: `UPDATE users SET active = f.active FROM ${dialect.rows(1, USER)}
        WHERE users.username = f.username AND f.active IS NOT NULL AND users.active IS DISTINCT FROM f.active`,
      params: dialect.bulk(USER, users),
    };
  }
  if (data.memberships.length > 0) {
    const missing = yield {
      sql: `SELECT f.ord FROM ${dialect.rows(1, [ID_NAME[0]!])}
        WHERE NOT EXISTS (SELECT 1 FROM groups g WHERE g.id = f.id) ORDER BY f.ord`,
      params: dialect.bulk(
        [ID_NAME[0]!],
        data.memberships.map((m) => [m.group]),
      ),
    };
    for (const index of positions(missing.rows)) {
      const group = data.memberships[index]!.group;
      problems.push({ path: `memberships[${index}].group`, reason: CONFLICT.noSuchGroup(group) });
    }
  }
  // Throwing rolls the whole file back: an invalid file changes nothing (contract §4).
  if (problems.length > 0) throw new ImportConflictError(problems);
  yield* writeMemberships(dialect, data.memberships, now);
  return { groups: data.groups.length, users: data.users.length, memberships: data.memberships.length };
}
