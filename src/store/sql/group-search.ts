// The group search of contract §13 on either SQL engine. What decides a match is one test, the same
// on both engines: `q` folded (store/search-text.ts) is a substring of the group's folded search text
// (groups.search_text, migration 11), by LIKE. Both sides are folded by one JavaScript function, so
// the engines compare the same code points; neither engine's own case or accent rules (SQLite's
// ASCII-only LIKE, PostgreSQL's collations and unaccent) would give the same answers on both.
//
// A scan of that test over every group costs its 100 000 texts per request (about 23 ms of CPU, a
// thirtieth of the group list: docs/benchmarks.md, the search row). So a trigram index proposes the
// candidates: a group holds `q` only if its text holds every trigram (three consecutive code points)
// of `q`, so the groups holding all of them are a superset of the matches, and the LIKE above, run on
// those candidates only, keeps exactly today's answers. The index is each engine's own inverted
// index over the same trigrams of the same folded text (migration 12): SQLite's FTS5 with its
// trigram tokenizer, kept by triggers from search_text; on PostgreSQL, a GIN index over a text[] of
// the trigrams that the fill writes beside the text (pg_trgm is an extension an operator may not be
// allowed to create, and it folds and splits words its own way). A table of (trigram, group) rows
// on both engines was measured first: 11.5 million rows at 100 000 groups, 736 MB on PostgreSQL and a
// first fill of minutes, where FTS5 and GIN keep compressed posting lists (about 22 MB each).
//
// The plan, per request: with no trigram (a `q` of 0 to 2 code points), or when the candidates are
// many (a common trigram: "group" is in every group), the scan is the cheaper plan: a short `q`
// matches a large share of the groups, and past SCAN_BEYOND candidates the index's lookups of
// single rows cost more than reading the table in order. A probe counts the candidates up to that
// bound (both indexes stream their posting lists, so a common trigram costs the bound, not its whole
// list); fewer, and the page and its count are taken from the candidates alone.
//
// Freshness, whoever writes a group (the service, the CLI, an operator's SQL shell): a trigger clears
// search_text (and the trigrams) when the name or a description changes, and a new group has none;
// a partial index finds those rows, so a search first folds them in JavaScript and writes them back
// only if their texts are still the ones folded (a compare-and-set: a concurrent edit leaves the row
// to the next search). Writing search_text is what indexes a group: FTS5's rows follow it by trigger
// (and go with the group when it is deleted); PostgreSQL's trigrams are written in the same UPDATE
// and its index follows the row. A group whose search_text is NULL matches nothing, whatever its
// stale index entries say, so the index never has to be fresher than the text it verifies.
import type { GroupSearch, GroupSearchHit, GroupSearchPage, GroupType } from '../group-types.ts';
import { groupSearchText, searchTrigrams } from '../search-text.ts';
import type { Column, Dialect, Row, Steps } from './driver.ts';

/** How many groups one transaction of the fill folds and indexes. */
const FILL_CHUNK = 1000;

/**
 * Past this many candidates a scan is the cheaper plan: at 100 000 groups the scan costs about as
 * much as verifying 10 000 candidates one row each (docs/benchmarks.md, the search row).
 */
const SCAN_BEYOND = 10_000;

const FILL: readonly Column[] = [
  ['id', 'integer'],
  ['name', 'text'],
  ['short_description', 'text'],
  ['description', 'text'],
  ['search_text', 'text'],
  ['trigrams', 'text'],
];

/** Whether some group's search text is missing (an index probe of the partial index). */
export function* searchTextMissing(): Steps<boolean> {
  const { rows } = yield { sql: 'SELECT id FROM groups WHERE search_text IS NULL LIMIT 1', params: [] };
  return rows.length > 0;
}

/**
 * Folds and indexes the next groups after id `after` whose search text is missing; run it in one
 * write transaction. Returns the last id it looked at, or null when none was left.
 */
export function* fillSearchText(dialect: Dialect, after: number): Steps<number | null> {
  const { rows } = yield {
    sql: `SELECT id, name, short_description, description FROM groups
      WHERE search_text IS NULL AND id > $1 ORDER BY id LIMIT ${FILL_CHUNK}`,
    params: [after],
  };
  if (rows.length === 0) return null;
  const folded = rows.map((row) => {
    const texts = {
      name: String(row['name']),
      short_description: String(row['short_description']),
      description: String(row['description']),
    };
    const text = groupSearchText(texts);
    // A query never holds a line break (foldForSearch makes white space one space), so the
    // trigrams across two fields are never asked for.
    const trigrams = dialect.trigramIndex.fill === null ? '' : fieldTrigrams(text);
    return [Number(row['id']), texts.name, texts.short_description, texts.description, text, trigrams];
  });
  const setTrigrams = dialect.trigramIndex.fill === null ? '' : `, ${dialect.trigramIndex.fill}`;
  yield {
    sql: `UPDATE groups AS g SET search_text = f.search_text${setTrigrams} FROM ${dialect.rows(1, FILL)}
      WHERE g.id = f.id AND g.search_text IS NULL AND g.name = f.name
        AND g.short_description = f.short_description AND g.description = f.description`,
    params: dialect.bulk(FILL, folded),
  };
  return Number(rows.at(-1)!['id']);
}

/** The trigrams of a stored search text within its fields, one a line. */
function fieldTrigrams(text: string): string {
  return searchTrigrams(text)
    .filter((trigram) => !trigram.includes('\n'))
    .join('\n');
}

/** `text` as a LIKE pattern: `\`, `%` and `_` taken literally. */
function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** How many groups the index proposes for `trigrams`, counted up to SCAN_BEYOND + 1. */
function* candidatesUpTo(dialect: Dialect, trigrams: readonly string[]): Steps<number> {
  const { rows } = yield {
    sql: `SELECT count(*) AS n FROM (${dialect.trigramIndex.ids(1)} LIMIT $2) c`,
    params: [dialect.trigramIndex.value(trigrams), SCAN_BEYOND + 1],
  };
  return Number(rows[0]!['n']);
}

/** One page of the search and the count of every match, with the caller's statuses: one snapshot. */
export function* searchGroups(dialect: Dialect, search: GroupSearch): Steps<GroupSearchPage> {
  const trigrams = searchTrigrams(search.text);
  const indexed = trigrams.length > 0 && (yield* candidatesUpTo(dialect, trigrams)) <= SCAN_BEYOND;
  const params: unknown[] = [];
  const where: string[] = [];
  if (indexed) {
    params.push(dialect.trigramIndex.value(trigrams));
    where.push(dialect.trigramIndex.holds(params.length));
  }
  if (search.text === '') where.push('g.search_text IS NOT NULL');
  else {
    params.push(likePattern(search.text));
    where.push(`g.search_text LIKE $${params.length} ESCAPE '\\'`);
  }
  if (search.type !== null) {
    params.push(search.type);
    where.push(`g.type = $${params.length}`);
  }
  const matching = `FROM groups g WHERE ${where.join(' AND ')}`;
  // The candidates are few: one pass counts them as it pages. A scan instead sorts only the page's
  // top rows and counts in a second pass, cheaper than keeping every match for a window.
  const total = indexed ? ', count(*) OVER () AS total' : '';
  const { rows } = yield {
    sql: `SELECT g.id, g.name, g.short_description, g.type${total} ${matching}
      ORDER BY g.search_text${dialect.binaryOrder}, g.id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    params: [...params, search.limit, search.offset],
  };
  if (rows.length === 0) return { count: search.offset === 0 ? 0 : null, results: [] };
  let count: number;
  if (indexed) count = Number(rows[0]!['total']);
  else if (rows.length < search.limit) count = search.offset + rows.length;
  else count = Number((yield { sql: `SELECT count(*) AS total ${matching}`, params }).rows[0]!['total']);
  return { count, results: yield* withStatuses(dialect, search.username, rows) };
}

/** The page's groups with `username`'s member_status in each. */
function* withStatuses(dialect: Dialect, username: string, rows: Row[]): Steps<GroupSearchHit[]> {
  const ids = rows.map((row) => Number(row['id']));
  const { rows: own } = yield {
    sql: `SELECT m.group_id, m.status FROM memberships m JOIN ${dialect.rows(2, [['id', 'integer']])}
      ON m.group_id = f.id WHERE m.username = $1`,
    params: [
      username,
      ...dialect.bulk(
        [['id', 'integer']],
        ids.map((id) => [id]),
      ),
    ],
  };
  const statuses = new Map(own.map((row) => [Number(row['group_id']), Number(row['status'])]));
  return rows.map((row) => {
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
}
