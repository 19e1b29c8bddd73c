// Two instances on shared stores (docs/operations.md, "Running several instances"): DATABASE_URL on a private
// PostgreSQL holding the groups, SESSION_STORE on a private Redis holding 1 000 000 sessions. Both
// instances are loaded at once (one wrk each, rates summed), against two baseline processes loaded
// the same way. The stores' own CPU per request is noted beside.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startPostgres } from '../../test/helpers/postgres.ts';
import { startRedis } from '../../test/helpers/redis.ts';
import { answerDifferences } from '../machinery/answers.ts';
import { type Contender, median } from '../machinery/compare.ts';
import { type BenchContext, contest } from '../machinery/contest.ts';
import { sanityCheck, wrkLoad } from '../machinery/measures.ts';
import { childWith, cpuSecondsOfTree, memoryOf } from '../machinery/procs.ts';
import type { SeedPlan } from '../machinery/seed.ts';
import { seedPostgres, seedRedis } from '../machinery/seed-stores.ts';
import { type Server, startBaseline, startClubhouse } from '../machinery/servers.ts';
import { type CaseResult, caseRow, memoryVerdict } from '../report/case-rows.ts';
import { type CaseRow, fixed, type MemoryRow, MIB } from '../report/markdown.ts';

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

export async function instancesCase(context: BenchContext, plan: SeedPlan): Promise<CaseResult> {
  const { log } = context;
  const postgres = await startPostgres({ private: true });
  const redis = await startRedis({ private: true });
  try {
    const database = await postgres.createDatabase();
    const started = performance.now();
    log('PostgreSQL + Redis: seeding 100 000 groups into PostgreSQL, 1 000 000 sessions into Redis …');
    await seedPostgres(database.url, plan);
    const loadFile = path.join(context.dir, 'load-redis-10k.txt');
    writeFileSync(loadFile, await seedRedis(redis.url, plan));
    const seeded = (performance.now() - started) / 1000;
    // The stores' server processes (children of this process), for their CPU.
    const stores = [
      childWith(process.pid, ['postgres', `-p ${new URL(postgres.adminUrl).port}`]),
      childWith(process.pid, [`:${new URL(redis.url).port}`]),
    ].filter((pid) => pid !== null);

    const instances: Server[] = [];
    const baselines: Server[] = [];
    for (const n of [1, 2]) {
      instances.push(
        context.track(
          await startClubhouse({
            label: `clubhouse ${n} (PostgreSQL + Redis)`,
            databaseUrl: database.url,
            dovecot: context.dovecot,
            dir: context.dir,
            settings: { SESSION_STORE: redis.url },
          }),
        ),
      );
      baselines.push(context.track(await startBaseline(`baseline ${n}`, context.answers, 1, context.dir)));
    }
    for (const server of instances) await sanityCheck(server, loadFile);
    const differences = await answerDifferences(baselines[0]!, instances[0]!, loadFile);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const idle = instances.map((s) => memoryOf(s.pid).rss);
    const baselineIdle = baselines.map((s) => memoryOf(s.pid).rss);

    // Said once, on the first row.
    const once = [`seeding PostgreSQL and Redis took ${fixed(seeded, 1)} s`];
    if (differences.length > 0) once.push(`answers differ from the baseline's: ${differences.join('; ')}`);
    const rows: CaseRow[] = [];
    for (const [name, short, script, urlPath, minimum] of [
      ['GET /api/auth/check, valid session', 'check', 'check.lua', '/api/auth/check', 0.65],
      ['GET /api/group/ (20 groups)', 'group list', 'group-list.lua', '/api/group/', 0.5],
    ] as const) {
      const title = `2 instances, PostgreSQL + Redis: ${name}`;
      log(title);
      const storeCpu: number[] = [];
      const subject: Contender = {
        label: '2 × clubhouse',
        measure: async (seconds) => {
          const before = sum(stores.map((pid) => cpuSecondsOfTree(pid)));
          const round = await wrkLoad(instances, script, urlPath, loadFile)(seconds);
          storeCpu.push((sum(stores.map((pid) => cpuSecondsOfTree(pid))) - before) / round.requests);
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
      rows.push(
        caseRow({
          name: title,
          chartLabel: `2 instances: ${short}`,
          reference: sides[0]!,
          subject: sides[1]!,
          peaks: [peaks[0]!, peaks[1]!],
          minimum,
          notes: [
            ...once.splice(0),
            `PostgreSQL's and Redis's CPU per request besides: ${fixed(median(storeCpu.slice(1)) * 1e6, 0)} µs ` +
              '(not in the clubhouse column); two wrk -t1 -c25, one per instance; p50/p99: the worse instance',
          ],
        }),
      );
    }
    const peaks = instances.map((s) => memoryOf(s.pid).hwm);
    const baselinePeaks = baselines.map((s) => memoryOf(s.pid).hwm);
    for (const server of [...instances, ...baselines]) await context.stop(server);
    const memory: MemoryRow[] = [
      {
        name: '2 instances on PostgreSQL + Redis (sum)',
        idle: sum(idle),
        peak: sum(peaks),
        detail: `VmHWM ${peaks.map((p) => fixed(p / MIB, 1)).join(' + ')} MiB; the stores' memory is not counted`,
        verdict: memoryVerdict(sum(peaks), sum(baselinePeaks), 2),
      },
      {
        name: '2 baseline processes (sum)',
        idle: sum(baselineIdle),
        peak: sum(baselinePeaks),
        detail: `VmHWM ${baselinePeaks.map((p) => fixed(p / MIB, 1)).join(' + ')} MiB`,
        verdict: null,
      },
    ];
    return { rows, memory };
  } finally {
    await redis.stop();
    await postgres.stop();
  }
}
