// WORKERS=2: check with a valid session on a 2-worker clubhouse, against a 2-worker baseline and,
// in the same rounds, the 1-process clubhouse (how much the second worker adds).

import { median, medianRound, ratiosOf } from '../machinery/compare.ts';
import { type BenchContext, contest, wrkContestant } from '../machinery/contest.ts';
import { sanityCheck } from '../machinery/measures.ts';
import { memoryOf, sumMemory } from '../machinery/procs.ts';
import { type Server, startBaseline, startClubhouse } from '../machinery/servers.ts';
import { atLeast, type CaseResult, caseRow, memoryVerdict } from '../report/case-rows.ts';
import { fixed, MIB } from '../report/markdown.ts';

/** The idle and peak (VmHWM) RSS summed over a server's processes: the primary and its workers. */
function treeMemory(server: Server): { now: number; hwm: number; perWorker: string } {
  const workers = server.servingPids().map(memoryOf);
  const all = sumMemory([memoryOf(server.pid), ...workers]);
  return { now: all.rss, hwm: all.hwm, perWorker: workers.map((m) => fixed(m.hwm / MIB, 1)).join(' + ') };
}

export async function workersCase(context: BenchContext): Promise<CaseResult> {
  const { big, clubhouse, log } = context;
  log('WORKERS=2: GET /api/auth/check, valid session');
  const name = 'WORKERS=2: GET /api/auth/check, valid session';
  const baseline = context.track(await startBaseline('baseline WORKERS=2', context.answers, 2, context.dir));
  let server: Server;
  try {
    server = context.track(
      await startClubhouse({
        label: 'clubhouse WORKERS=2',
        databaseUrl: `sqlite:${big.path}`,
        dovecot: context.dovecot,
        dir: context.dir,
        settings: { WORKERS: '2' },
      }),
    );
    await sanityCheck(server, big.loadFile);
  } catch (err) {
    const problem = (err instanceof Error ? err.message : String(err))
      .split('\n')
      .slice(0, 3)
      .join(' ')
      .slice(0, 300);
    log(`WORKERS=2 not available: ${problem}`);
    await context.stop(baseline);
    return {
      rows: [
        {
          name,
          chartLabel: 'WORKERS=2: check',
          comparison: null,
          unit: 'req/s',
          verdicts: [
            { target: '≥ 1.25× the 1-process check', actual: `not available: ${problem}`, pass: null },
          ],
          notes: [],
          ratioTarget: null,
          peakRss: null,
        },
      ],
      memory: [{ name: 'clubhouse WORKERS=2', idle: null, peak: null, detail: problem, verdict: null }],
    };
  }
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const [idle, baselineIdle] = [treeMemory(server).now, treeMemory(baseline).now];
  const { sides, peaks } = await contest(context, [
    wrkContestant('baseline WORKERS=2', baseline, 'check.lua', '/api/auth/check', big.loadFile),
    wrkContestant('clubhouse WORKERS=2', server, 'check.lua', '/api/auth/check', big.loadFile),
    wrkContestant('clubhouse 1 process', clubhouse, 'check.lua', '/api/auth/check', big.loadFile),
  ]);
  const [reference, subject, single] = sides as [(typeof sides)[0], (typeof sides)[0], (typeof sides)[0]];
  const scaling = ratiosOf(subject, single);
  const [mine, theirs] = [treeMemory(server), treeMemory(baseline)];
  await context.stop(server);
  await context.stop(baseline);
  return {
    rows: [
      caseRow({
        name,
        chartLabel: 'WORKERS=2: check',
        reference,
        subject,
        peaks: [peaks[0]!, peaks[1]!],
        minimum: null,
        verdicts: [atLeast('≥ 1.25× the 1-process check', median(scaling), 1.25)],
        notes: [
          `the 1-process clubhouse in the same rounds: ${Math.round(medianRound(single).rate)} req/s ` +
            `(p99 ${fixed(medianRound(single).p99Ms, 2)} ms); WORKERS=2 / 1 process per round: ` +
            `${scaling.map((r) => fixed(r, 2)).join(', ')}`,
        ],
      }),
    ],
    memory: [
      {
        name: 'clubhouse WORKERS=2, 1 000 000 sessions (primary + 2 workers)',
        idle,
        peak: mine.hwm,
        detail: `sum of VmHWM; workers ${mine.perWorker} MiB; sampled peak of the sum ${fixed(peaks[1]! / MIB, 1)} MiB`,
        verdict: memoryVerdict(mine.hwm, theirs.hwm, 2),
      },
      {
        name: 'baseline WORKERS=2 (primary + 2 workers)',
        idle: baselineIdle,
        peak: theirs.hwm,
        detail: `sum of VmHWM; workers ${theirs.perWorker} MiB`,
        verdict: null,
      },
    ],
  };
}
