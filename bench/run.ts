// npm run bench: seeds SQLite with 1 000 000 sessions, starts the harness Dovecot, clubhouse with
// its default settings and the baseline (the fastest node:http server sending clubhouse's own
// answers), loads them with wrk (and a login loop), and writes bench/results/latest.md and
// ratios.svg. BENCH_QUICK=1 shortens every round for a smoke run (bench/results/quick.md).
// BENCH_ONLY=login,memory (a comma-separated subset of the names in machinery/options.ts) runs only
// those cases at the real schedule, into bench/results/only-<cases>.md. BENCH_TARGET=container runs
// each clubhouse as a container of the image (machinery/container.ts; root and podman needed), its
// report named with -container.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureDebianPackage } from '../test/helpers/apt.ts';
import { removeNow, removeOnExit } from '../test/helpers/child.ts';
import { type Dovecot, startDovecot } from '../test/helpers/dovecot.ts';
import { npmStart } from '../test/helpers/npm-start.ts';
import { checkCases, groupCases, searchCase, sizeCase } from './cases/http.ts';
import { instancesCase } from './cases/instances.ts';
import { ldapLoginCase } from './cases/ldap.ts';
import { imapLoginCase } from './cases/login.ts';
import { passkeyLoginCase } from './cases/passkey.ts';
import { syncCase } from './cases/sync.ts';
import { workersCase } from './cases/workers.ts';
import { answerDifferences, bodySizes, recordAnswers, recordSessionAnswers } from './machinery/answers.ts';
import { median } from './machinery/compare.ts';
import { stopContainers } from './machinery/container.ts';
import type { BenchContext } from './machinery/contest.ts';
import { CONNECTIONS, sanityCheck, THREADS } from './machinery/measures.ts';
import {
  BIG,
  CHART_FILE,
  LOGIN_CONCURRENCY,
  ONLY,
  QUICK,
  RECORDED_FILE,
  REPORT_FILE,
  runs,
  SCHEDULE,
  SMALL,
} from './machinery/options.ts';
import { memoryOf } from './machinery/procs.ts';
import { seedDatabase } from './machinery/seed.ts';
import { type Server, startBaseline, startClubhouse } from './machinery/servers.ts';
import { WRK_BIN } from './machinery/wrk.ts';
import { type CaseResult, memoryVerdict } from './report/case-rows.ts';
import { renderChart } from './report/chart.ts';
import { machineLines, settingsLine } from './report/machine.ts';
import { type CaseRow, fixed, type MemoryRow, MIB, recordedRun, renderReport } from './report/markdown.ts';

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

interface Cleanup {
  servers: Server[];
  /** Every clubhouse started, for the report's settings lines. */
  started: Server[];
  dovecot: Dovecot | null;
  dir: string | null;
}

const idleAfterStart = async (server: Server) => {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return memoryOf(server.pid).rss;
};

async function main(cleanup: Cleanup): Promise<{ report: string; chart: string }> {
  const loadBefore = os.loadavg()[0]!;
  const startedAt = new Date();
  // Read before this run overwrites it (a full run writes the same file).
  const recorded = existsSync(RECORDED_FILE)
    ? recordedRun(readFileSync(RECORDED_FILE, 'utf8'), path.relative(process.cwd(), RECORDED_FILE))
    : null;
  await ensureDebianPackage(WRK_BIN, 'wrk');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'clubhouse-bench-'));
  removeOnExit(dir);
  cleanup.dir = dir;

  log('seeding 1 000 000 sessions, 100 000 groups …');
  const big = seedDatabase(path.join(dir, 'big.db'), path.join(dir, 'load-10k.txt'), BIG);
  const small = seedDatabase(path.join(dir, 'small.db'), path.join(dir, 'load-small-1k.txt'), SMALL);
  log(`seeded in ${fixed(big.seconds, 1)} s (+ ${fixed(small.seconds, 1)} s for the 1 000-session database)`);
  // The same 1 000-session working set against the big database, for the O(log n) comparison.
  const big1kLoadFile = path.join(dir, 'load-big-1k.txt');
  const bigLines = readFileSync(big.loadFile, 'utf8').split('\n');
  writeFileSync(big1kLoadFile, `${bigLines.slice(0, SMALL.loadSessions).join('\n')}\n`);

  const dovecot = await startDovecot({ authFailureDelay: 0 });
  cleanup.dovecot = dovecot;
  const track = (server: Server) => {
    cleanup.servers.push(server);
    if (!server.label.startsWith('baseline')) cleanup.started.push(server);
    return server;
  };
  const stop = async (server: Server) => {
    cleanup.servers = cleanup.servers.filter((s) => s !== server);
    await server.stop();
  };

  const clubhouse = track(
    await startClubhouse({ label: 'clubhouse', databaseUrl: `sqlite:${big.path}`, dovecot, dir }),
  );
  await sanityCheck(clubhouse, big.loadFile);
  // Idle: started, one sanity request served, no load yet (what a quiet instance holds).
  const idle = await idleAfterStart(clubhouse);
  const answersFile = path.join(dir, 'answers.json');
  const sizes = bodySizes(await recordAnswers(clubhouse, big.loadFile, answersFile));
  const baseline = track(await startBaseline('baseline', answersFile, 1, dir));
  const baselineIdle = await idleAfterStart(baseline);
  const differences = await answerDifferences(baseline, clubhouse, big.loadFile);
  // A correct server for the read cases: each session's own answers (baseline.ts),
  // recorded from a clubhouse of their own, so that the shared one starts the cases as before.
  let sessionBaseline: Server | null = null;
  if (runs('check') || runs('groups')) {
    const sessionAnswers = path.join(dir, 'session-answers.json');
    const recorder = await startClubhouse({
      label: 'recorder',
      databaseUrl: `sqlite:${big.path}`,
      dovecot,
      dir,
    });
    try {
      await recordSessionAnswers(recorder, big.loadFile, sessionAnswers);
    } finally {
      await recorder.stop();
    }
    sessionBaseline = track(
      await startBaseline('baseline per session', answersFile, 1, dir, { sessionAnswers }),
    );
    differences.push(
      ...(await answerDifferences(sessionBaseline, clubhouse, big.loadFile)).map((d) => `per session: ${d}`),
    );
  }

  const context: BenchContext = {
    schedule: SCHEDULE,
    log,
    dir,
    dovecot,
    big,
    small,
    big1kLoadFile,
    answers: answersFile,
    baseline,
    sessionBaseline,
    clubhouse,
    track,
    stop,
  };
  const results: CaseResult[] = [];
  if (runs('check')) results.push(await checkCases(context));
  if (runs('groups')) results.push(await groupCases(context, sizes['group-list']));
  if (runs('search')) results.push(await searchCase(context));
  if (runs('login')) results.push(await imapLoginCase(context, LOGIN_CONCURRENCY));
  if (runs('ldap')) results.push(await ldapLoginCase(context, LOGIN_CONCURRENCY));
  if (runs('passkey')) results.push(await passkeyLoginCase(context, LOGIN_CONCURRENCY));
  if (runs('sync')) results.push(await syncCase(context));
  if (runs('size')) results.push(await sizeCase(context));
  const baselinePeak = memoryOf(baseline.pid).hwm;
  await stop(baseline);
  // Its peak includes parsing the recorded answers at start (about 100 MB of JSON): its RSS now is
  // what it holds.
  const sessionBaselineMemory = sessionBaseline === null ? null : memoryOf(sessionBaseline.pid);
  if (sessionBaseline !== null) await stop(sessionBaseline);
  if (runs('workers')) results.push(await workersCase(context));
  const clubhouseMemory = memoryOf(clubhouse.pid);
  // Every 1-process case on the 1 000 000-session database: the shared process's, and the size case's own.
  const onePeak = Math.max(clubhouseMemory.hwm, ...results.map((r) => r.onePeak ?? 0));
  await stop(clubhouse);
  if (runs('instances')) results.push(await instancesCase(context, BIG));

  const memory: MemoryRow[] = [];
  if (runs('memory')) {
    memory.push(
      {
        name: 'clubhouse, 1 process, 1 000 000 sessions',
        idle,
        peak: onePeak,
        detail:
          'idle: VmRSS 1 s after start and one sanity request; peak: VmHWM over every 1-process case above ' +
          `(the shared process ${fixed(clubhouseMemory.hwm / MIB, 1)} MiB, the size case's own ` +
          `${fixed((results.find((r) => r.onePeak !== undefined)?.onePeak ?? 0) / MIB, 1)} MiB; ` +
          `file-backed now ${fixed(clubhouseMemory.file / MIB, 1)} MiB: the node binary's and libraries' ` +
          'mapped pages; SQLite maps nothing, its mmap_size is 0)',
        verdict: memoryVerdict(onePeak, baselinePeak),
      },
      { name: 'baseline, 1 process', idle: baselineIdle, peak: baselinePeak, detail: 'VmHWM', verdict: null },
    );
    if (sessionBaselineMemory !== null)
      memory.push({
        name: 'baseline per session, 1 process',
        idle: null,
        peak: sessionBaselineMemory.hwm,
        detail:
          `each of the ${BIG.loadSessions.toLocaleString('en-US')} load sessions' own answers: ` +
          `${fixed(sessionBaselineMemory.rss / MIB, 1)} MiB after the read cases (VmHWM, above, includes ` +
          'parsing the recorded answers at start)',
        verdict: null,
      });
  }
  const cases: CaseRow[] = results.flatMap((r) => r.rows);
  memory.push(...results.flatMap((r) => r.memory));

  const observations: string[] = results.flatMap((r) => r.observations ?? []);
  if (differences.length > 0)
    observations.push(`The baseline's answers differ from clubhouse's: ${differences.join('; ')}`);
  const busy = median(cases.flatMap((c) => c.comparison?.subject.rounds ?? []).map((r) => r.machineBusy));
  if (busy > 0.9) {
    observations.push(
      `The machine's ${os.availableParallelism()} cores were ${Math.round(busy * 100)} % busy (median over ` +
        'the clubhouse rounds): wrk, the server and (for logins) Dovecot compete for the same cores, so ' +
        'every figure here is a CPU-bound one, and a server that needs less CPU also leaves more for wrk.',
    );
  }
  if (loadBefore > 0.5) {
    observations.push(
      `The 1-minute load average was already ${fixed(loadBefore, 2)} before the run (other processes on this ` +
        'machine): figures may be low or noisy; the per-round ratios cancel part of it.',
    );
  }
  const report = renderReport({
    cores: os.availableParallelism(),
    recorded,
    machine: machineLines(startedAt, loadBefore, big.seconds),
    method: [
      `wrk -t${THREADS} -c${CONNECTIONS} (two instances: one wrk -t1 -c25 each, at once); logins: a closed loop ` +
        `of ${LOGIN_CONCURRENCY} concurrent clients (bench/machinery/login-load.ts)`,
      `${SCHEDULE.warmupSeconds} s warm-up per server, then ${SCHEDULE.rounds} round(s) of ${SCHEDULE.roundSeconds} s ` +
        `alternating reference and clubhouse, each round in the order of the one before reversed${QUICK ? ' (BENCH_QUICK)' : ''}${ONLY.length > 0 ? ` (BENCH_ONLY=${ONLY.join(',')})` : ''}`,
      'Figures are medians over the rounds; the ratio is the median of the per-round ratios (clubhouse / reference of ' +
        'the same round). CPU per request: user + system time of the server process and its workers in the round / ' +
        'requests answered. Log per request: bytes the service wrote to its stdout (a file) / requests. Peak RSS: ' +
        'the largest summed VmRSS of the side’s processes, sampled every 200 ms during the case',
      `Database: ${BIG.sessions.toLocaleString('en-US')} sessions over ${BIG.users.toLocaleString('en-US')} users, ` +
        `${BIG.groups.toLocaleString('en-US')} groups, ${BIG.groupsPerUser} memberships per user; the load rotates over ` +
        `${BIG.loadSessions.toLocaleString('en-US')} sessions, one per user`,
      'Baseline: bare node:http on the same node binary sending clubhouse’s own answers, recorded at start (status, ' +
        `headers, body: check ${sizes.check} B, group list ${sizes['group-list']} B, group detail ${sizes['group-detail']} B), ` +
        'precomputed, chosen by path alone (bench/machinery/baseline.ts); WORKERS=2: the same with 2 node:cluster workers; ' +
        'two instances: two such processes. Baseline per session (check, list, detail rows "vs each session\'s own ' +
        'answer", no target): the same server answering each load session with its own recorded answers, found by ' +
        `the cookie in a Map: a correct server for a load of ${BIG.loadSessions.toLocaleString('en-US')} users that does nothing else`,
      `npm start's environment, given to every clubhouse started: ${
        Object.entries(npmStart().environment)
          .map(([name, value]) => `\`${name}=${value}\``)
          .join(', ') || 'none'
      }`,
    ],
    settings: cleanup.started.map(settingsLine),
    cases,
    memory,
    observations,
  });
  const chart = renderChart(
    cases,
    `clubhouse ÷ its reference (the baseline unless named), ${startedAt.toISOString().slice(0, 10)}`,
  );
  return { report, chart };
}

const cleanup: Cleanup = { servers: [], started: [], dovecot: null, dir: null };
let exitCode = 0;
try {
  const { report, chart } = await main(cleanup);
  mkdirSync(path.dirname(REPORT_FILE), { recursive: true });
  writeFileSync(REPORT_FILE, report);
  process.stdout.write(report);
  log(`written to ${path.relative(process.cwd(), REPORT_FILE)}`);
  if (CHART_FILE !== null) {
    writeFileSync(CHART_FILE, chart);
    log(`chart written to ${path.relative(process.cwd(), CHART_FILE)}`);
  }
} catch (err) {
  log(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  exitCode = 1;
} finally {
  for (const server of cleanup.servers) await server.stop().catch(() => undefined);
  await cleanup.dovecot?.stop().catch(() => undefined);
  await stopContainers().catch(() => undefined);
  if (cleanup.dir !== null) removeNow(cleanup.dir);
}
process.exit(exitCode);
