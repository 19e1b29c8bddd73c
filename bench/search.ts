// npm run bench:search: the CPU of one group search (contract §13: GET /api/groups) at 100 000
// groups, on SQLite and on PostgreSQL, below HTTP (the `search` case of `npm run bench` measures the
// whole request, on SQLite only). Each engine gets a fresh database with the bench's groups
// (machinery/seed.ts: groupOf), written by SQL as an operator's load would; the first search folds and
// indexes them all and is timed; then each query is asked again and again through the domain's
// searchGroups, and the CPU it cost is divided by the number asked: this process's CPU, plus on
// PostgreSQL that of the server's backends on the database (from /proc: the harness server runs on
// this machine; its resolution is a clock tick, so each query runs for at least SEARCH_SECONDS).
// Prints one Markdown table. The harness servers start as the tests start them.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { searchGroups } from '../src/groups/search.ts';
import type { Stores } from '../src/store/types.ts';
import { sqliteDb } from '../test/helpers/engines.ts';
import { storeOf } from '../test/helpers/stores.ts';
import { groupOf } from './machinery/seed.ts';

const GROUPS = Number(process.env['SEARCH_GROUPS'] ?? '100000');
const SECONDS = Number(process.env['SEARCH_SECONDS'] ?? '3');
const TICK_SECONDS = 0.01;

/** The queries: what each matches among the bench's groups. */
const QUERIES: readonly [q: string, what: string][] = [
  ['group 001', '1 % (1 000 names)'],
  ['meetings of group 4242', '1 group (a long query)'],
  ['group', 'every group (a common trigram)'],
  ['g', 'every group (one character)'],
  ['42', 'about 5 % (two characters)'],
  ['', 'no q: every group'],
];

async function seed(stores: Stores, admin: pg.Client | null): Promise<void> {
  const groups = Array.from({ length: GROUPS }, (_, i) => groupOf(i + 1));
  const columns = ['id', 'name', 'description', 'short_description', 'activities', 'type'] as const;
  if (stores.engine.database === 'sqlite') {
    const db = sqliteDb(stores);
    const insert = db.prepare(`INSERT INTO groups (${columns.join(', ')}) VALUES (?, ?, ?, ?, ?, ?)`);
    db.exec('BEGIN IMMEDIATE');
    for (const g of groups) insert.run(...columns.map((c) => g[c]));
    db.exec('COMMIT');
  } else {
    // Its own connection: the pool's statement timeout is for requests, not for a bulk load.
    await admin!.query(
      `INSERT INTO groups (${columns.join(', ')}) SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[], $6::smallint[])`,
      columns.map((c) => groups.map((g) => g[c])),
    );
    await admin!.query('ANALYZE groups');
  }
}

/** CPU seconds of the server's backends on `database`, but for the one asking. */
async function backendSeconds(admin: pg.Client | null, database: string): Promise<number> {
  if (admin === null) return 0;
  const { rows } = await admin.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
    [database],
  );
  let ticks = 0;
  for (const { pid } of rows) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // A backend that ended meanwhile.
    }
  }
  return ticks * TICK_SECONDS;
}

const ownSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

async function measure(kind: 'sqlite' | 'postgres'): Promise<string[]> {
  const data = await storeOf(kind).create();
  const stores = await data.open();
  let admin: pg.Client | null = null;
  let database = '';
  try {
    const ask = (q: string) =>
      searchGroups(stores.groups, 'nobody', new URLSearchParams({ q }), 'http://localhost/api/groups');
    if (kind === 'postgres') {
      const url = new URL(data.env['DATABASE_URL']!);
      database = url.pathname.slice(1);
      admin = new pg.Client({ connectionString: url.toString() });
      await admin.connect();
    }
    await seed(stores, admin);
    const started = performance.now();
    await ask('warm-up');
    const lines = [
      `| ${kind} | the first search (folds and indexes ${GROUPS} groups) | ${((performance.now() - started) / 1000).toFixed(1)} s wall | – |`,
    ];
    await admin?.query('ANALYZE groups');
    for (const [q, what] of QUERIES) {
      const answer = await ask(q);
      const count = answer.kind === 'page' ? answer.page.count : -1;
      const cpu0 = ownSeconds() + (await backendSeconds(admin, database));
      const wall0 = performance.now();
      let asked = 0;
      while (asked < 5 || performance.now() - wall0 < SECONDS * 1000) {
        await ask(q);
        asked++;
      }
      const cpu = ownSeconds() + (await backendSeconds(admin, database)) - cpu0;
      lines.push(
        `| ${kind} | \`${q}\`: ${what}, count ${count} | ${((cpu / asked) * 1000).toFixed(2)} ms | ${asked} |`,
      );
      console.error(lines.at(-1));
    }
    return lines;
  } finally {
    await admin?.end();
    await stores.close();
    await data.drop();
  }
}

const lines = ['| Engine | Query | CPU per search | Searches |', '| --- | --- | --- | --- |'];
for (const kind of ['sqlite', 'postgres'] as const) lines.push(...(await measure(kind)));
console.log(lines.join('\n'));
process.exit(0);
