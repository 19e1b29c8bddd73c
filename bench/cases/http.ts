// The wrk cases against one clubhouse process and the 1-process baseline: check with a valid
// session and without a cookie, the group list and a group's detail, and check with 1 000 sessions
// seeded against 1 000 000 (the same 1 000-session working set, each in a fresh process).

import { readFileSync } from 'node:fs';
import { median, medianRound, ratiosOf, type Side } from '../machinery/compare.ts';
import { type BenchContext, type Contestant, contest, wrkContestant } from '../machinery/contest.ts';
import { sanityCheck } from '../machinery/measures.ts';
import { memoryOf } from '../machinery/procs.ts';
import { startClubhouse } from '../machinery/servers.ts';
import { type CaseResult, caseRow } from '../report/case-rows.ts';
import { fixed, MIB } from '../report/markdown.ts';

/**
 * The sides of a read case: the baseline, clubhouse and, when there is one, the baseline answering
 * each session with its own bytes, in the same rounds.
 */
function readContestants(context: BenchContext, script: string, urlPath: string): Contestant[] {
  const { baseline, sessionBaseline, clubhouse, big } = context;
  return [
    wrkContestant('baseline', baseline, script, urlPath, big.loadFile),
    wrkContestant('clubhouse', clubhouse, script, urlPath, big.loadFile),
    ...(sessionBaseline === null
      ? []
      : [wrkContestant('baseline per session', sessionBaseline, script, urlPath, big.loadFile)]),
  ];
}

/**
 * clubhouse against the per-session baseline, with no target: how far it is from a server that
 * answers each user with their own bytes and does nothing else, and how far that server itself is
 * from the replay.
 */
function perSessionRows(name: string, chartLabel: string, sides: readonly Side[], peaks: readonly number[]) {
  const [replay, clubhouse, perSession] = sides;
  if (replay === undefined || clubhouse === undefined || perSession === undefined) return [];
  const itself = median(ratiosOf(perSession, replay));
  return [
    caseRow({
      name: `${name}: clubhouse vs each session's own answer`,
      chartLabel: `${chartLabel} vs per session`,
      reference: perSession,
      subject: clubhouse,
      peaks: [peaks[2]!, peaks[1]!],
      minimum: null,
      notes: [
        `the baseline per session sends each load session its own recorded answer, found by the cookie in a Map; it ran at ${fixed(itself, 3)}× the baseline's rate in the same rounds`,
      ],
    }),
  ];
}

/** check with a valid session (10 000 rotating of 1 000 000), then without a cookie. */
export async function checkCases(context: BenchContext): Promise<CaseResult> {
  const { baseline, clubhouse, big, log } = context;
  log('GET /api/auth/check, valid session (rotating 10 000)');
  const valid = await contest(context, readContestants(context, 'check.lua', '/api/auth/check'));
  const p99 = medianRound(valid.sides[1]!).p99Ms;
  log('GET /api/auth/check, no cookie');
  const anonymous = await contest(context, [
    wrkContestant('baseline', baseline, 'no-cookie.lua', '/api/auth/check', big.loadFile),
    wrkContestant('clubhouse', clubhouse, 'no-cookie.lua', '/api/auth/check', big.loadFile),
  ]);
  return {
    rows: [
      caseRow({
        name: 'GET /api/auth/check, valid session (1 000 000 sessions, 10 000 rotating)',
        chartLabel: 'check, valid session',
        reference: valid.sides[0]!,
        subject: valid.sides[1]!,
        peaks: [valid.peaks[0]!, valid.peaks[1]!],
        // Read-path targets: docs/benchmarks.md, "Targets".
        minimum: 0.85,
        verdicts: [{ target: 'p99 ≤ 10 ms', actual: `${fixed(p99, 2)} ms`, pass: p99 <= 10 }],
      }),
      ...perSessionRows('GET /api/auth/check, valid session', 'check', valid.sides, valid.peaks),
      caseRow({
        name: 'GET /api/auth/check, no cookie (403 expected)',
        chartLabel: 'check, no cookie',
        reference: anonymous.sides[0]!,
        subject: anonymous.sides[1]!,
        peaks: [anonymous.peaks[0]!, anonymous.peaks[1]!],
        minimum: 0.95,
        allowNon2xx: true,
      }),
    ],
    memory: [],
  };
}

/** The group list (20 groups each) and a group's detail (one of the user's own). */
export async function groupCases(context: BenchContext, listBytes: number): Promise<CaseResult> {
  const { log } = context;
  const rows = [];
  for (const [name, chartLabel, script, urlPath, minimum] of [
    [
      `GET /api/group/ (20 groups, ${fixed(listBytes / 1024, 1)} KiB)`,
      'group list',
      'group-list.lua',
      '/api/group/',
      0.8,
    ],
    ['GET /api/group/{id} (own groups)', 'group detail', 'group-detail.lua', '/api/group/1', 0.85],
  ] as const) {
    log(name);
    const { sides, peaks } = await contest(context, readContestants(context, script, urlPath));
    rows.push(
      caseRow({
        name,
        chartLabel,
        reference: sides[0]!,
        subject: sides[1]!,
        peaks: [peaks[0]!, peaks[1]!],
        minimum,
      }),
      ...perSessionRows(name, chartLabel, sides, peaks),
    );
  }
  return { rows, memory: [] };
}

/**
 * contract §13's search: 100 000 groups, a query matching 1 % of them (1 000), page 1, against the
 * group list on the same process and the same sessions: what a search costs beside the page every
 * member opens. The first search folds and indexes every group's search text (sql/group-search.ts);
 * that is done by the sanity request before the rounds.
 */
export async function searchCase(context: BenchContext): Promise<CaseResult> {
  const { clubhouse, big, log } = context;
  log('GET /api/groups?q=group+001 (1 % of 100 000 groups) vs GET /api/group/');
  const [id] = readFileSync(big.loadFile, 'utf8').split('\n', 1)[0]!.split(' ');
  const started = performance.now();
  const first = await fetch(`${clubhouse.url}/api/groups?q=group+001`, {
    headers: { cookie: `sessionid=${id}` },
  });
  const firstSeconds = (performance.now() - started) / 1000;
  const page = (await first.json()) as { count?: number; results?: unknown[] };
  if (first.status !== 200 || page.count !== 1000 || page.results?.length !== 50) {
    throw new Error(`search answered ${first.status} ${JSON.stringify(page).slice(0, 200)}`);
  }
  const { sides, peaks } = await contest(context, [
    wrkContestant('group list', clubhouse, 'group-list.lua', '/api/group/', big.loadFile),
    wrkContestant('search', clubhouse, 'group-search.lua', '/api/groups?q=group+001', big.loadFile),
  ]);
  return {
    rows: [
      caseRow({
        name: 'GET /api/groups?q=group+001 (100 000 groups, 1 000 match, page 1) vs the group list',
        chartLabel: 'search, 1 % of 100 000 groups',
        reference: sides[0]!,
        subject: sides[1]!,
        peaks: [peaks[0]!, peaks[1]!],
        minimum: null,
        notes: [
          `the first search, which folds and indexes the 100 000 groups' search texts, took ${fixed(firstSeconds, 2)} s`,
        ],
      }),
    ],
    memory: [],
  };
}

/** A fresh clubhouse on `databaseUrl`, sanity-checked on `loadFile`, with its RSS after a second idle. */
async function freshClubhouse(context: BenchContext, label: string, databaseUrl: string, loadFile: string) {
  const server = context.track(
    await startClubhouse({ label, databaseUrl, dovecot: context.dovecot, dir: context.dir }),
  );
  await sanityCheck(server, loadFile);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return { server, idle: memoryOf(server.pid).rss };
}

/**
 * check on a clubhouse with 1 000 sessions seeded, against the baseline and against one with
 * 1 000 000 loaded over the same number of sessions, in the same rounds. Each in a fresh
 * process of its own, so that the ratio says what the table's size costs, not what the earlier
 * cases left in the shared process's caches and heap.
 */
export async function sizeCase(context: BenchContext): Promise<CaseResult> {
  const { baseline, small, big, log } = context;
  log('GET /api/auth/check with 1 000 sessions seeded vs 1 000 000 (the same 1 000-session working set)');
  const smaller = await freshClubhouse(
    context,
    'clubhouse (1 000 sessions)',
    `sqlite:${small.path}`,
    small.loadFile,
  );
  const bigger = await freshClubhouse(
    context,
    'clubhouse (1 000 000 sessions, fresh)',
    `sqlite:${big.path}`,
    context.big1kLoadFile,
  );
  const { sides, peaks } = await contest(context, [
    wrkContestant('baseline', baseline, 'check.lua', '/api/auth/check', small.loadFile),
    wrkContestant('1 000 sessions', smaller.server, 'check.lua', '/api/auth/check', small.loadFile),
    wrkContestant('1 000 000 sessions', bigger.server, 'check.lua', '/api/auth/check', context.big1kLoadFile),
  ]);
  const [reference, smallSide, bigSide] = sides as [(typeof sides)[0], (typeof sides)[0], (typeof sides)[0]];
  const hwm = memoryOf(smaller.server.pid).hwm;
  const bigHwm = memoryOf(bigger.server.pid).hwm;
  await context.stop(smaller.server);
  await context.stop(bigger.server);
  return {
    rows: [
      caseRow({
        name: 'GET /api/auth/check, valid session (1 000 sessions, all rotating)',
        chartLabel: 'check, 1 000 sessions seeded',
        reference,
        subject: smallSide,
        peaks: [peaks[0]!, peaks[1]!],
        minimum: 0.65,
      }),
      caseRow({
        name: 'GET /api/auth/check, 1 000 000 sessions vs 1 000 (1 000 rotating in both)',
        chartLabel: 'check, 1 000 000 vs 1 000 sessions',
        reference: smallSide,
        subject: bigSide,
        peaks: [peaks[1]!, peaks[2]!],
        minimum: 0.9,
        notes: [
          'both rotate over 1 000 sessions, each in a fresh process of its own, so only the size of the table differs',
        ],
      }),
    ],
    memory: [
      {
        name: 'clubhouse, 1 process, 1 000 sessions',
        idle: smaller.idle,
        peak: hwm,
        detail: `VmHWM (check load only); ${fixed(peaks[1]! / MIB, 1)} MiB sampled peak VmRSS`,
        verdict: null,
      },
    ],
    onePeak: bigHwm,
  };
}
