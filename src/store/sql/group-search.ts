// The group search of contract §13 on either SQL engine: one scan of the folded search text
// (groups.search_text, migration 11) with a LIKE over it, the page sorted by that text (which begins
// with the folded name) then id, and the caller's statuses for the page's groups only.
//
// Why a precomputed folded column and a scan, not an index: the folding (store/search-text.ts) is
// done by one JavaScript function for the stored text and the query, so both engines compare the
// same code points; neither engine's own case or accent rules (SQLite's ASCII-only LIKE, PostgreSQL's
// collations and unaccent) would give the same answers on both. A substring match cannot use a
// B-tree; a trigram index (pg_trgm) would exist on PostgreSQL only, needs an extension an operator may
// not be allowed to create, and 100 000 groups scan in a few tens of milliseconds
// (docs/benchmarks.md, the search row).
//
// Freshness of the folded text, whoever writes a group: a trigger clears search_text when the name
// or a description changes (and a new group has none), and a partial index finds those rows, so a
// search first folds them in JavaScript and writes them back only if their texts are still the ones
// folded (a compare-and-set: a concurrent edit leaves the row to the next search).
import type { GroupSearch, GroupSearchHit, GroupSearchPage, GroupType } from '../group-types.ts';
import { groupSearchText } from '../search-text.ts';
import type { Column, Dialect, Steps } from './driver.ts';

/** How many groups one statement of the fill folds. */
const FILL_CHUNK = 2000;

const FILL: readonly Column[] = [
  ['id', 'integer'],
  ['name', 'text'],
  ['short_description', 'text'],
  ['description', 'text'],
  ['search_text', 'text'],
];

/** Whether some group's search text is missing (an index probe of the partial index). */
export function* searchTextMissing(): Steps<boolean> {
  const { rows } = yield { sql: 'SELECT id FROM groups WHERE search_text IS NULL LIMIT 1', params: [] };
  return rows.length > 0;
}

/** Folds every group whose search text is missing; run it in one write transaction. */
export function* fillSearchText(dialect: Dialect): Steps<number> {
  let after = 0;
  let filled = 0;
  for (;;) {
    const { rows } = yield {
      sql: `SELECT id, name, short_description, description FROM groups
        WHERE search_text IS NULL AND id > $1 ORDER BY id LIMIT ${FILL_CHUNK}`,
      params: [after],
    };
    if (rows.length === 0) return filled;
    const folded = rows.map((row) => {
      const texts = {
        name: String(row['name']),
        short_description: String(row['short_description']),
        description: String(row['description']),
      };
      return [
        Number(row['id']),
        texts.name,
        texts.short_description,
        texts.description,
        groupSearchText(texts),
      ];
    });
    const { changes } = yield {
      sql: `UPDATE groups AS g SET search_text = f.search_text FROM ${dialect.rows(1, FILL)}
        WHERE g.id = f.id AND g.search_text IS NULL AND g.name = f.name
          AND g.short_description = f.short_description AND g.description = f.description`,
      params: dialect.bulk(FILL, folded),
    };
    filled += changes;
    after = Number(rows.at(-1)!['id']);
  }
}

/** One page of the search and the count of every match, with the caller's statuses: one snapshot. */
export function* searchGroups(dialect: Dialect, search: GroupSearch): Steps<GroupSearchPage> {
  const params: unknown[] = [search.pattern];
  let where = "g.search_text LIKE $1 ESCAPE '\\'";
  if (search.type !== null) {
    params.push(search.type);
    where += ` AND g.type = $${params.length}`;
  }
  params.push(search.limit, search.offset);
  const { rows } = yield {
    sql: `SELECT g.id, g.name, g.short_description, g.type, count(*) OVER () AS total FROM groups g
      WHERE ${where} ORDER BY g.search_text${dialect.binaryOrder}, g.id
      LIMIT $${params.length - 1} OFFSET $${params.length}`,
    params,
  };
  if (rows.length === 0) return { count: search.offset === 0 ? 0 : null, results: [] };
  const ids = rows.map((row) => Number(row['id']));
  const { rows: own } = yield {
    sql: `SELECT m.group_id, m.status FROM memberships m JOIN ${dialect.rows(2, [['id', 'integer']])}
      ON m.group_id = f.id WHERE m.username = $1`,
    params: [
      search.username,
      ...dialect.bulk(
        [['id', 'integer']],
        ids.map((id) => [id]),
      ),
    ],
  };
  const statuses = new Map(own.map((row) => [Number(row['group_id']), Number(row['status'])]));
  const results: GroupSearchHit[] = rows.map((row) => {
    const id = Number(row['id']);
    const status = statuses.get(id);
    return {
      id,
      name: String(row['name']),
      short_description: String(row['short_description']),
      type: (Number(row['type']) === 1 ? 1 : 0) as GroupType,
      member_status: status === 0 || status === 1 || status === 2 ? status : -1,
    };
  });
  return { count: Number(rows[0]!['total']), results };
}
