// The group search of contract §13 on either SQL engine. What decides a match is one test, the same
// on both engines: `q` folded (store/search-text.ts) is a substring of the group's folded search text
// (groups.search_text, migration 11), by LIKE. Both sides are folded by one JavaScript function, so
// the engines compare the same code points; neither engine's own case or accent rules (SQLite's
// ASCII-only LIKE, PostgreSQL's collations and unaccent) would give the same answers on both.
//
// Running that test on every group cost a scan of 100 000 texts per request (docs/benchmarks.md, the
// group search). So a trigram index proposes candidates: a text holds `q` only if it holds every
// trigram (three consecutive code points) of `q`, so the groups holding all of them are a superset
// of the matches, and the same LIKE, run on those candidates only, keeps exactly the answers the scan
// gave. The index is each engine's own compressed inverted index over the same trigrams of the same
// folded text (migration 12): SQLite's FTS5 with its trigram tokenizer (folding nothing itself), kept
// by triggers from search_text; on PostgreSQL, a GIN index over a table of each group's trigrams,
// which the fill writes with the text (pg_trgm is an extension an operator may not be allowed to
// create, and it keeps only letters and digits, folded its own way). A table of (trigram, group) rows
// on both engines was tried first: 11.5 million rows at 100 000 groups, 736 MB and a first fill of
// minutes on PostgreSQL, where FTS5 and GIN keep a few tens of MB.
//
// The plan, per request. A probe counts the candidates up to SCAN_BEYOND (both indexes stream their
// posting lists, so a common trigram costs the bound, not its whole list); fewer, and the page and
// its count come from the candidates alone, in one pass. More (a common trigram: "group" is in every
// group), and a scan is cheaper than fetching so many rows one by one; it sorts only the page's top
// rows and counts in a second pass, rather than keeping every match for a window. A `q` of one or two
// code points has no trigram: its matches may be few ("42") or nearly all ("e"), so it is scanned in
// one pass that counts as it goes (the plan of before, as cheap as any for the few).
//
// Freshness, whoever writes a group (the service, the CLI, an operator's SQL shell): a trigger clears
// search_text when the name or a description changes (on PostgreSQL the id too), and a new group has
// none; a partial index finds those rows, so a search first folds them in JavaScript and writes them
// back only if their texts are still the ones folded (a compare-and-set: a concurrent edit leaves the
// row to the next search), in chunks of one transaction each. Writing search_text is what indexes a
// group: FTS5's rows follow it by trigger, whatever changes it (and go with the group when it is
// deleted); PostgreSQL's trigram rows are written by the fill, in its transaction, for the rows its
// compare-and-set wrote, and go with a deleted group by trigger. A group whose search_text is NULL
// matches nothing, whatever stale index entries it still has, so the index never has to be fresher
// than the text that verifies its candidates.
import type { GroupSearch, GroupSearchHit, GroupSearchPage, GroupType } from '../group-types.ts';
import { groupSearchText, searchTrigrams } from '../search-text.ts';
import type { Column, Dialect, Row, Steps } from './driver.ts';

/** How many groups one transaction of the fill folds and indexes. */
const FILL_CHUNK = 1000;

/**
 * Past this many candidates, the scan. Measured at 100 000 groups (docs/benchmarks.md, the group
 * search), a candidate costs 3–4 µs and a scan 80–100 ms: the break-even is near 25 000 candidates,
 * and the bound stays below it so that a smaller table, whose scan is cheaper, is not far off.
 */
const SCAN_BEYOND = 10_000;

const FILL: readonly Column[] = [
  ['id', 'integer'],
  ['name', 'text'],
  ['short_description', 'text'],
  ['description', 'text'],
  ['search_text', 'text'],
];

const TRIGRAMS: readonly Column[] = [
  ['group_id', 'integer'],
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
    return [
      Number(row['id']),
      texts.name,
      texts.short_description,
      texts.description,
      groupSearchText(texts),
    ];
  });
  const { rows: written } = yield {
    sql: `UPDATE groups AS g SET search_text = f.search_text FROM ${dialect.rows(1, FILL)}
      WHERE g.id = f.id AND g.search_text IS NULL AND g.name = f.name
        AND g.short_description = f.short_description AND g.description = f.description
      ${dialect.trigramIndex.fill === null ? '' : 'RETURNING g.id, g.search_text'}`,
    params: dialect.bulk(FILL, folded),
  };
  if (dialect.trigramIndex.fill !== null && written.length > 0) {
    yield {
      sql: dialect.trigramIndex.fill,
      params: dialect.bulk(
        TRIGRAMS,
        written.map((row) => [Number(row['id']), fieldTrigrams(String(row['search_text']))]),
      ),
    };
  }
  return Number(rows.at(-1)!['id']);
}

/**
 * The trigrams of a stored search text within its fields, one a line: a query never holds a line
 * break (foldForSearch makes white space one space), so a trigram across two fields is never asked.
 */
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

/**
 * How the page is found: from the index's candidates, or by a scan that counts in the same pass (a
 * window over the matches, then the page sorted out of them) or in a second pass after a top-N sort
 * of the page (cheaper when nearly every group matches: no window keeps them all).
 */
type Plan = 'candidates' | 'scan' | 'scan-and-count';

/** One page of the search and the count of every match, with the caller's statuses: one snapshot. */
export function* searchGroups(dialect: Dialect, search: GroupSearch): Steps<GroupSearchPage> {
  const trigrams = searchTrigrams(search.text);
  let plan: Plan;
  // No trigram: every group (no q), or a q of one or two code points, whose matches may be few
  // ("42") or nearly all ("e"): one pass, as cheap as any plan for the few and no dearer than before.
  if (trigrams.length === 0) plan = search.text === '' ? 'scan-and-count' : 'scan';
  else plan = (yield* candidatesUpTo(dialect, trigrams)) <= SCAN_BEYOND ? 'candidates' : 'scan-and-count';
  const params: unknown[] = [];
  const where: string[] = [];
  if (plan === 'candidates') {
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
  const total = plan === 'scan-and-count' ? '' : ', count(*) OVER () AS total';
  const { rows } = yield {
    sql: `SELECT g.id, g.name, g.short_description, g.type${total} ${matching}
      ORDER BY g.search_text${dialect.binaryOrder}, g.id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    params: [...params, search.limit, search.offset],
  };
  if (rows.length === 0) return { count: search.offset === 0 ? 0 : null, results: [] };
  let count: number;
  if (plan !== 'scan-and-count') count = Number(rows[0]!['total']);
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
