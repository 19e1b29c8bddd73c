// Two instances on shared stores (docs/operations.md, "Running several instances"): DATABASE_URL on
// a private PostgreSQL holding the groups and 1 000 000 sessions, and SESSION_STORE on a private
// Redis holding the same sessions. Two pairs of instances in turn: PostgreSQL + Redis (sessions in
// Redis), then PostgreSQL only (SESSION_STORE unset: sessions in PostgreSQL too). Both instances of
// a pair are loaded at once (one wrk each, rates summed), against two baseline processes loaded the
// same way. The stores' own CPU per request is noted beside.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startPostgres } from '../../test/helpers/postgres.ts';
import { startRedis } from '../../test/helpers/redis.ts';
import { answerDifferences } from '../machinery/answers.ts';
import { type Contender, median } from '../machinery/compare.ts';
import { type BenchContext, contest } from '../machinery/contest.ts';
import { sanityCheck, wrkLoad } from '../machinery/measures.ts';
import { childWith, cpuSecondsOfTree, memoryOf } from '../machinery/procs.ts';
import type { SeedPlan } from '../machinery/seed.ts';
import { seedSharedStores } from '../machinery/seed-stores.ts';
import { type Server, startBaseline, startClubhouse } from '../machinery/servers.ts';
import { storeCounters } from '../machinery/store-counters.ts';
import { type CaseResult, caseRow, memoryVerdict } from '../report/case-rows.ts';
import { type CaseRow, fixed, type MemoryRow, MIB } from '../report/markdown.ts';

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/** What the stores did per request answered in one round (docs/scaling.md's inputs). */
interface StorePerRequest {
  readonly postgresCpu: number;
  readonly redisCpu: number;
  readonly postgresTransactions: number;
  readonly redisScripts: number;
  readonly redisCommands: number;
}

/** The stores' share per request, medians over the rounds after the first (the caches filling). */
function storeNote(rounds: readonly StorePerRequest[]): string {
  const of = (pick: (r: StorePerRequest) => number, digits: number, scale = 1) =>
    fixed(median(rounds.map(pick)) * scale, digits);
  const postgres = `PostgreSQL ${of((r) => r.postgresCpu, 1, 1e6)} µs CPU, ${of((r) => r.postgresTransactions, 3)} statements`;
  const redis = `Redis ${of((r) => r.redisCpu, 1, 1e6)} µs CPU, ${of((r) => r.redisScripts, 3)} scripts (${of((r) => r.redisCommands, 3)} commands)`;
  return `besides (not in the clubhouse column), per request: ${postgres}; ${redis}`;
}

/** One load of a pair: title, chart label, wrk script, path, and the least ratio its target asks. */
type Load = readonly [name: string, short: string, script: string, urlPath: string, minimum: number];

const CHECK = ['GET /api/auth/check, valid session', 'check', 'check.lua', '/api/auth/check'] as const;
const LIST = ['GET /api/group/ (20 groups)', 'group list', 'group-list.lua', '/api/group/'] as const;
const DETAIL = [
  'GET /api/group/{id} (own groups)',
  'group detail',
  'group-detail.lua',
  '/api/group/1',
] as const;

/** The sessions a load file rotates over (one a line). */
const rotationOf = (loadFile: string) =>
  readFileSync(loadFile, 'utf8')
    .split('\n')
    .filter((line) => line !== '').length;

/** The pairs and their loads, with their targets (docs/scaling.md; PostgreSQL + Redis: docs/benchmarks.md, "Targets"). */
const PAIRS: readonly { name: string; redis: boolean; loads: readonly Load[] }[] = [
  {
    name: 'PostgreSQL + Redis',
    redis: true,
    loads: [
      [...CHECK, 0.75],
      [...LIST, 0.65],
      [...DETAIL, 0.7],
    ],
  },
  {
    name: 'PostgreSQL only',
    redis: false,
    loads: [
      [...CHECK, 0.4],
      [...LIST, 0.35],
    ],
  },
];

interface Shared {
  readonly baselines: Server[];
  readonly databaseUrl: string;
  readonly redisUrl: string;
  readonly loadFile: string;
  /** The stores' server processes (children of this process), for their CPU: PostgreSQL, Redis. */
  readonly stores: readonly [postgres: number | null, redis: number | null];
  /** PostgreSQL's superuser URL, for its statistics (store-counters.ts). */
  readonly adminUrl: string;
  /** Said once, on the first row. */
  readonly once: string[];
}

export async function instancesCase(context: BenchContext, plan: SeedPlan): Promise<CaseResult> {
  const { log } = context;
  const postgres = await startPostgres({ private: true });
  const redis = await startRedis({ private: true });
  try {
    const database = await postgres.createDatabase();
    const started = performance.now();
    log(
      'PostgreSQL + Redis: seeding 100 000 groups and 1 000 000 sessions into PostgreSQL, the same sessions into Redis …',
    );
    const loadFile = path.join(context.dir, 'load-stores-10k.txt');
    writeFileSync(loadFile, await seedSharedStores(database.url, redis.url, plan));
    const seeded = (performance.now() - started) / 1000;
    const stores = [
      childWith(process.pid, ['postgres', `-p ${new URL(postgres.adminUrl).port}`]),
      childWith(process.pid, [`:${new URL(redis.url).port}`]),
    ] as const;
    const baselines: Server[] = [];
    for (const n of [1, 2])
      baselines.push(context.track(await startBaseline(`baseline ${n}`, context.answers, 1, context.dir)));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const baselineIdle = baselines.map((s) => memoryOf(s.pid).rss);
    const shared: Shared = {
      baselines,
      databaseUrl: database.url,
      redisUrl: redis.url,
      loadFile,
      stores,
      adminUrl: postgres.adminUrl,
      once: [`seeding PostgreSQL and Redis took ${fixed(seeded, 1)} s`],
    };
    const results: CaseResult[] = [];
    for (const pair of PAIRS) results.push(await pairCase(context, shared, pair));
    const baselinePeaks = baselines.map((s) => memoryOf(s.pid).hwm);
    for (const server of baselines) await context.stop(server);
    const memory: MemoryRow[] = results.flatMap((r) =>
      r.memory.map((row) => ({ ...row, verdict: memoryVerdict(row.peak ?? 0, sum(baselinePeaks), 2) })),
    );
    memory.push({
      name: '2 baseline processes (sum)',
      idle: sum(baselineIdle),
      peak: sum(baselinePeaks),
      detail: `VmHWM ${baselinePeaks.map((p) => fixed(p / MIB, 1)).join(' + ')} MiB`,
      verdict: null,
    });
    return { rows: results.flatMap((r) => r.rows), memory };
  } finally {
    await redis.stop();
    await postgres.stop();
  }
}

/** A pair of instances on `pair`'s stores, loaded with each of its loads; stopped at the end. */
async function pairCase(
  context: BenchContext,
  shared: Shared,
  pair: (typeof PAIRS)[number],
): Promise<CaseResult> {
  const { baselines, loadFile, stores } = shared;
  const instances: Server[] = [];
  for (const n of [1, 2]) {
    instances.push(
      context.track(
        await startClubhouse({
          label: `clubhouse ${n} (${pair.name})`,
          databaseUrl: shared.databaseUrl,
          dovecot: context.dovecot,
          dir: context.dir,
          settings: pair.redis ? { SESSION_STORE: shared.redisUrl } : {},
        }),
      ),
    );
  }
  for (const server of instances) await sanityCheck(server, loadFile);
  const differences = await answerDifferences(baselines[0]!, instances[0]!, loadFile);
  if (differences.length > 0)
    shared.once.push(`${pair.name}: answers differ from the baseline's: ${differences.join('; ')}`);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const idle = instances.map((s) => memoryOf(s.pid).rss);
  const rows: CaseRow[] = [];
  for (const [name, short, script, urlPath, minimum] of pair.loads) {
    const title = `2 instances, ${pair.name}: ${name}`;
    context.log(title);
    const perRequest: StorePerRequest[] = [];
    const counters = await storeCounters(
      pair.redis ? shared.redisUrl : null,
      shared.databaseUrl,
      shared.adminUrl,
    );
    const cpu = () => stores.map((pid) => (pid === null ? 0 : cpuSecondsOfTree(pid)));
    const subject: Contender = {
      label: '2 × clubhouse',
      // Every session of the rotation read twice before a round (compare.ts: warmUp).
      warmupRequests: 2 * rotationOf(loadFile),
      measure: async (seconds) => {
        const [counted, before] = [await counters.read(), cpu()];
        const round = await wrkLoad(instances, script, urlPath, loadFile)(seconds);
        const after = cpu();
        const now = await counters.read();
        const per = (n: number) => n / round.requests;
        perRequest.push({
          postgresCpu: per(after[0]! - before[0]!),
          redisCpu: per(after[1]! - before[1]!),
          postgresTransactions: per(now.postgresTransactions - counted.postgresTransactions),
          redisScripts: per(now.redisScripts - counted.redisScripts),
          redisCommands: per(now.redisCommands - counted.redisCommands),
        });
        return round;
      },
    };
    const { sides, peaks } = await contest(context, [
      {
        label: '2 × baseline',
        measure: wrkLoad(baselines, script, urlPath, loadFile),
        pids: baselines.map((s) => s.pid),
      },
      { ...subject, pids: instances.map((s) => s.pid) },
    ]);
    await counters.close();
    rows.push(
      caseRow({
        name: title,
        chartLabel: `2 instances, ${pair.redis ? 'PG + Redis' : 'PG only'}: ${short}`,
        reference: sides[0]!,
        subject: sides[1]!,
        peaks: [peaks[0]!, peaks[1]!],
        minimum,
        notes: [
          ...shared.once.splice(0),
          storeNote(perRequest.slice(-context.schedule.rounds)),
          'two wrk -t1 -c25, one per instance; p50/p99: the worse instance',
        ],
      }),
    );
  }
  if (pair.redis) rows.push(await mixedRow(context, instances, loadFile));
  const peaks = instances.map((s) => memoryOf(s.pid).hwm);
  for (const server of instances) await context.stop(server);
  const memory: MemoryRow[] = [
    {
      name: `2 instances on ${pair.name} (sum)`,
      idle: sum(idle),
      peak: sum(peaks),
      detail: `VmHWM ${peaks.map((p) => fixed(p / MIB, 1)).join(' + ')} MiB; the stores' memory is not counted`,
      verdict: null,
    },
  ];
  return { rows, memory };
}

/**
 * contract §13's writes beside the reads: the group list on both instances alone, and with one
 * membership write for every 100 reads going to the instances in turn (a seeded user asking to join a
 * group, then withdrawing: each a transaction that logs its user in the group change log, so every
 * instance drops that user's memberships and list at its next catch-up, and nothing else). The writes
 * are paced by the last round alone: its rate / 100 a second.
 */
async function mixedRow(
  context: BenchContext,
  instances: readonly Server[],
  loadFile: string,
): Promise<CaseRow> {
  const title = '2 instances, PostgreSQL + Redis: GET /api/group/ with 1 join or withdrawal per 100 reads';
  context.log(title);
  // Each load session with a group its user is not in: a write changes no answer, though it drops its
  // user's (the log names the user), which that user's next read fills again.
  const sessions = readFileSync(loadFile, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [session, ...groups] = line.split(' ');
      let outside = 1;
      while (groups.includes(String(outside))) outside++;
      return { session: session!, outside };
    });
  const reads = wrkLoad(instances, 'group-list.lua', '/api/group/', loadFile);
  let readRate = 0;
  let writes = 0;
  let failedWrites = 0;
  const alone: Contender = {
    label: 'group list alone',
    measure: async (seconds) => {
      const round = await reads(seconds);
      readRate = round.rate;
      return round;
    },
  };
  const withWrites: Contender = {
    label: 'with 1 % writes',
    measure: async (seconds) => {
      let stop = false;
      const interval = 1000 / Math.max(1, readRate / 100);
      const writer = (async () => {
        // An ask makes a request, the withdrawal that follows removes it.
        for (let n = 0; !stop; n++) {
          const server = instances[n % instances.length]!;
          const { session, outside } = sessions[Math.floor(n / 2) % sessions.length]!;
          const answer = await fetch(`${server.url}/api/group/${outside}/membership`, {
            method: n % 2 === 0 ? 'POST' : 'DELETE',
            headers: { cookie: `sessionid=${session}` },
          });
          await answer.arrayBuffer();
          writes++;
          if (answer.status !== 200 && answer.status !== 201 && answer.status !== 204) failedWrites++;
          await new Promise((resolve) => setTimeout(resolve, interval));
        }
      })();
      try {
        return await reads(seconds);
      } finally {
        stop = true;
        await writer;
      }
    },
  };
  const { sides, peaks } = await contest(context, [
    { ...alone, pids: instances.map((s) => s.pid) },
    { ...withWrites, pids: instances.map((s) => s.pid) },
  ]);
  return caseRow({
    name: title,
    chartLabel: '2 instances, PG + Redis: group list, 1 % writes',
    reference: sides[0]!,
    subject: sides[1]!,
    peaks: [peaks[0]!, peaks[1]!],
    minimum: null,
    notes: [
      `${writes} writes in all (${failedWrites} answered neither 201 nor 204 nor 200), paced at the last round alone's rate / 100`,
    ],
  });
}
