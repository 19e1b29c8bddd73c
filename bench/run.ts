// npm run bench: seeds SQLite with 1 000 000 sessions, starts the harness Dovecot, clubhouse and a
// bare node:http baseline, loads them with wrk (and a login loop), and writes bench/results/latest.md.
// BENCH_QUICK=1 shortens every round for a smoke run. BENCH_ONLY=login,memory (a comma-separated
// subset of check, groups, login, ldap, size, workers, memory) runs only those cases at the real schedule, for a
// focused before/after figure; its report goes to bench/results/only-<cases>.md.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureDebianPackage } from '../test/helpers/apt.ts';
import { removeNow, removeOnExit } from '../test/helpers/child.ts';
import { type Dovecot, startDovecot } from '../test/helpers/dovecot.ts';
import { alternate, type Comparison, compare, median, medianRound, ratiosOf, type Side } from './compare.ts';
import { ldapLoginCase } from './ldap-case.ts';
import {
  assertRunning,
  CONNECTIONS,
  dovecotPid,
  headerDifference,
  loginLoad,
  loginRound,
  sanityCheck,
  THREADS,
  withCpu,
  wrkLoad,
} from './measures.ts';
import { memoryOf, RssSampler, sumMemory } from './procs.ts';
import { type CaseRow, fixed, type MemoryRow, MIB, renderReport, type Verdict } from './report.ts';
import { type SeedPlan, seedDatabase } from './seed.ts';
import { NODE, type Server, startBaseline, startClubhouse } from './servers.ts';
import { WRK_BIN } from './wrk.ts';

const QUICK = process.env['BENCH_QUICK'] === '1';
const SCHEDULE = QUICK
  ? { warmupSeconds: 1, roundSeconds: 2, rounds: 1 }
  : { warmupSeconds: 3, roundSeconds: 10, rounds: 3 };
// clubhouse runs at most IMAP_MAX_CONCURRENCY (32 by default) IMAP logins at once; at that
// concurrency none waits in its queue, so the login figures compare like with like.
const LOGIN_CONCURRENCY = 32;
const BIG: SeedPlan = {
  sessions: 1_000_000,
  users: 10_000,
  loadSessions: 10_000,
  groups: 100_000,
  groupsPerUser: 20,
};
const SMALL: SeedPlan = {
  sessions: 1_000,
  users: 1_000,
  loadSessions: 1_000,
  groups: 1_000,
  groupsPerUser: 20,
};
const CASES = ['check', 'groups', 'login', 'ldap', 'size', 'workers', 'memory'] as const;
const ONLY = (process.env['BENCH_ONLY'] ?? '').split(',').filter((name) => name !== '');
for (const name of ONLY) {
  if (!(CASES as readonly string[]).includes(name)) throw new Error(`BENCH_ONLY: unknown case ${name}`);
}
/** Whether the case group `name` runs in this invocation. */
const runs = (name: (typeof CASES)[number]): boolean => ONLY.length === 0 || ONLY.includes(name);
const ROOT = path.join(import.meta.dirname, '..');
// A smoke or focused run must not overwrite the figures of a full one.
const RESULTS = path.join(
  import.meta.dirname,
  'results',
  QUICK ? 'quick.md' : ONLY.length > 0 ? `only-${ONLY.join('-')}.md` : 'latest.md',
);

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

function sh(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return '?';
  }
}

/** The sampled peak of the summed VmRSS, split into anonymous and file-backed pages. */
function sampled(sampler: RssSampler): string {
  const { rss, anon, file } = sampler.peak;
  return `sampled peak VmRSS ${fixed(rss / MIB, 1)} MiB = anonymous ${fixed(anon / MIB, 1)} + file-backed ${fixed(file / MIB, 1)}`;
}

// ---- verdicts -------------------------------------------------------------------------------------

function atLeast(target: string, value: number, minimum: number): Verdict {
  return { target, actual: `${fixed(value, 2)}×`, pass: value >= minimum };
}

function ratioOf(comparison: Comparison): number {
  return median(comparison.ratios);
}

function row(
  name: string,
  comparison: Comparison | null,
  verdicts: Verdict[],
  notes: string[] = [],
  unit: CaseRow['unit'] = 'req/s',
): CaseRow {
  return { name, comparison, unit, verdicts, notes };
}

function unexpectedErrors(comparison: Comparison, allowNon2xx: boolean): string[] {
  const notes: string[] = [];
  const rounds = comparison.subject.rounds;
  const non2xx = rounds.reduce((a, r) => a + r.non2xx, 0);
  const errors = rounds.reduce((a, r) => a + r.errors, 0);
  if (!allowNon2xx && non2xx > 0) notes.push(`${non2xx} responses ≥ 400 under load`);
  if (errors > 0) notes.push(`${errors} socket errors or timeouts under load`);
  return notes;
}

// ---- the run --------------------------------------------------------------------------------------

interface Cleanup {
  servers: Server[];
  dovecot: Dovecot | null;
  dir: string | null;
}

async function stopServer(cleanup: Cleanup, server: Server): Promise<void> {
  cleanup.servers = cleanup.servers.filter((s) => s !== server);
  await server.stop();
}

async function main(cleanup: Cleanup): Promise<string> {
  const loadBefore = os.loadavg()[0]!;
  const startedAt = new Date();
  await ensureDebianPackage(WRK_BIN, 'wrk');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'clubhouse-bench-'));
  removeOnExit(dir);
  cleanup.dir = dir;

  log('seeding 1 000 000 sessions, 100 000 groups …');
  const big = seedDatabase(path.join(dir, 'big.db'), path.join(dir, 'load-10k.txt'), BIG);
  const small = seedDatabase(path.join(dir, 'small.db'), path.join(dir, 'load-small-1k.txt'), SMALL);
  log(`seeded in ${fixed(big.seconds, 1)} s (+ ${fixed(small.seconds, 1)} s for the 1 000-session database)`);
  // The same 1 000-session working set against the big database, for the O(log n) comparison.
  const big1k = path.join(dir, 'load-big-1k.txt');
  writeFileSync(
    big1k,
    `${readFileSync(big.loadFile, 'utf8').split('\n').slice(0, SMALL.loadSessions).join('\n')}\n`,
  );

  const dovecot = await startDovecot({ authFailureDelay: 0 });
  cleanup.dovecot = dovecot;
  const dovecotMaster = dovecotPid(dovecot);

  const baseline = await startBaseline('baseline', 1);
  cleanup.servers.push(baseline);
  const clubhouse = await startClubhouse('clubhouse', big.path, dovecot, 1);
  cleanup.servers.push(clubhouse);
  const clubhouseRss = new RssSampler(clubhouse.pid);
  const baselineRss = new RssSampler(baseline.pid);
  await sanityCheck(clubhouse, big.loadFile);
  // Idle: started, one sanity request served, no load yet (what a quiet instance holds).
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const idleMemory = memoryOf(clubhouse.pid);
  const headerDiff = await headerDifference(baseline, clubhouse, big.loadFile);

  const cases: CaseRow[] = [];
  const observations: string[] = [];
  if (headerDiff.length > 0)
    observations.push(`Response headers of check, clubhouse vs baseline: ${headerDiff.join(', ')}`);
  const versus = async (name: string, script: string, urlPath: string) => {
    log(`${name}`);
    return compare(
      { label: 'baseline', measure: wrkLoad(baseline, script, urlPath, big.loadFile) },
      { label: 'clubhouse', measure: wrkLoad(clubhouse, script, urlPath, big.loadFile) },
      SCHEDULE,
      log,
    );
  };

  let checkValid: Comparison | null = null;
  if (runs('check')) {
    checkValid = await versus(
      'GET /api/auth/check, valid session (rotating 10 000)',
      'check.lua',
      '/api/auth/check',
    );
    const checkP99 = medianRound(checkValid.subject).p99Ms;
    cases.push(
      row(
        'GET /api/auth/check, valid session (10 000 rotating)',
        checkValid,
        [
          atLeast('≥ 0.60× baseline', ratioOf(checkValid), 0.6),
          { target: 'p99 ≤ 10 ms', actual: `${fixed(checkP99, 2)} ms`, pass: checkP99 <= 10 },
        ],
        unexpectedErrors(checkValid, false),
      ),
    );

    const noCookie = await versus('GET /api/auth/check, no cookie', 'no-cookie.lua', '/api/auth/check');
    cases.push(
      row(
        'GET /api/auth/check, no cookie (403 expected)',
        noCookie,
        [atLeast('≥ 0.85× baseline', ratioOf(noCookie), 0.85)],
        unexpectedErrors(noCookie, true),
      ),
    );
  }

  if (runs('groups')) {
    const list = await versus('GET /api/group/', 'group-list.lua', '/api/group/');
    cases.push(
      row(
        'GET /api/group/ (20 groups each)',
        list,
        [atLeast('≥ 0.45× baseline', ratioOf(list), 0.45)],
        unexpectedErrors(list, false),
      ),
    );

    const detail = await versus('GET /api/group/{id}', 'group-detail.lua', '/api/group/1');
    cases.push(
      row(
        'GET /api/group/{id} (own groups)',
        detail,
        [atLeast('≥ 0.45× baseline', ratioOf(detail), 0.45)],
        unexpectedErrors(detail, false),
      ),
    );
  }

  let loginRss: RssSampler | null = null;
  if (runs('login')) {
    log(`POST /api/auth/login + logout vs raw IMAP LOGIN/LOGOUT, ${LOGIN_CONCURRENCY} at once`);
    loginRss = new RssSampler(clubhouse.pid, 100);
    const rawFailures: Record<string, number> = {};
    const loginFailures: Record<string, number> = {};
    const rawAuthMs: number[] = [];
    const logoutMs: number[] = [];
    const login = await compare(
      {
        label: 'raw IMAP',
        measure: (seconds) =>
          withCpu(dovecotMaster, true, async () => {
            const result = await loginLoad('imap', [
              'localhost',
              String(dovecot.tlsPort),
              dovecot.caFile,
              String(LOGIN_CONCURRENCY),
              String(seconds),
            ]);
            rawAuthMs.push(result.secondaryP50Ms);
            return loginRound(result, rawFailures);
          }),
      },
      {
        label: 'clubhouse',
        measure: (seconds) =>
          withCpu(clubhouse.pid, false, async () => {
            const result = await loginLoad('http', [
              clubhouse.url,
              String(LOGIN_CONCURRENCY),
              String(seconds),
            ]);
            assertRunning(clubhouse);
            logoutMs.push(result.secondaryP50Ms);
            return loginRound(result, loginFailures);
          }),
      },
      SCHEDULE,
      log,
    );
    loginRss.stop();
    const ownTime = medianRound(login.subject).p50Ms - medianRound(login.reference).p50Ms;
    const failureText = (failures: Record<string, number>) =>
      Object.entries(failures)
        .map(([reason, n]) => `${n}× ${reason}`)
        .join(', ');
    const loginNotes = [
      `the service's own time per login ≈ clubhouse login p50 − raw IMAP session p50 = ${fixed(ownTime, 1)} ms. ` +
        'Approximate: the raw loop (TLS, greeting, LOGIN, LOGOUT; its LOGIN alone took ' +
        `${fixed(median(rawAuthMs), 1)} ms p50) is the least an IMAP check costs. clubhouse's client ` +
        '(src/backends/imap/client.ts) sends one command over implicit TLS (AUTHENTICATE PLAIN with SASL-IR; the ' +
        "capabilities come with Dovecot's greeting) and flushes LOGOUT without waiting for its answer, " +
        'which the raw loop does wait for, so the ratio can exceed 1. Everything shares 2 cores with ' +
        "Dovecot, whose per-login processes are the bottleneck (Reference server CPU of this case is Dovecot's).",
      `rates count logins; each clubhouse login is followed by a logout request (p50 ${fixed(median(logoutMs), 1)} ms), ` +
        'each raw session by LOGOUT',
    ];
    if (Object.keys(loginFailures).length > 0)
      loginNotes.push(`failed clubhouse logins: ${failureText(loginFailures)}`);
    if (Object.keys(rawFailures).length > 0)
      loginNotes.push(`failed raw IMAP sessions: ${failureText(rawFailures)}`);
    cases.push(
      row(
        `POST /api/auth/login + logout (${LOGIN_CONCURRENCY} at once)`,
        login,
        [atLeast('≥ 0.90× raw IMAP rate', ratioOf(login), 0.9)],
        loginNotes,
        'logins/s',
      ),
    );
  }

  if (runs('ldap')) {
    cases.push(
      await ldapLoginCase({
        database: small.path,
        dovecot,
        concurrency: LOGIN_CONCURRENCY,
        schedule: SCHEDULE,
        log,
      }),
    );
  }

  let smallMemory: ReturnType<typeof memoryOf> | null = null;
  let smallRss: RssSampler | null = null;
  if (runs('size')) {
    log('GET /api/auth/check with 1 000 sessions seeded vs 1 000 000 (the same 1 000-session working set)');
    const clubhouseSmall = await startClubhouse('clubhouse (1 000 sessions)', small.path, dovecot, 1);
    cleanup.servers.push(clubhouseSmall);
    smallRss = new RssSampler(clubhouseSmall.pid);
    await sanityCheck(clubhouseSmall, small.loadFile);
    const size = await compare(
      {
        label: '1 000 sessions',
        measure: wrkLoad(clubhouseSmall, 'check.lua', '/api/auth/check', small.loadFile),
      },
      { label: '1 000 000 sessions', measure: wrkLoad(clubhouse, 'check.lua', '/api/auth/check', big1k) },
      SCHEDULE,
      log,
    );
    const sizeRatio = ratioOf(size);
    cases.push(
      row(
        'GET /api/auth/check, 1 000 000 sessions vs 1 000',
        size,
        [{ target: 'within 10 %', actual: `${fixed(sizeRatio, 2)}×`, pass: Math.abs(sizeRatio - 1) <= 0.1 }],
        ['both rotate over 1 000 sessions, so only the size of the table differs'],
      ),
    );
    smallRss.stop();
    smallMemory = memoryOf(clubhouseSmall.pid);
    await stopServer(cleanup, clubhouseSmall);
  }

  baselineRss.stop();
  const baselineMemory = memoryOf(baseline.pid);
  await stopServer(cleanup, baseline);

  let workersMemory: MemoryRow | null = null;
  if (runs('workers')) {
    log('WORKERS=2: GET /api/auth/check, valid session');
    const baseline2 = await startBaseline('baseline WORKERS=2', 2);
    cleanup.servers.push(baseline2);
    let clubhouse2: Server | null = null;
    let workersProblem = '';
    try {
      clubhouse2 = await startClubhouse('clubhouse WORKERS=2', big.path, dovecot, 2);
      cleanup.servers.push(clubhouse2);
      await sanityCheck(clubhouse2, big.loadFile);
    } catch (err) {
      workersProblem = (err instanceof Error ? err.message : String(err))
        .split('\n')
        .slice(0, 3)
        .join(' ')
        .slice(0, 300);
      log(`WORKERS=2 not available: ${workersProblem}`);
    }
    if (clubhouse2 !== null && workersProblem === '') {
      const server = clubhouse2;
      const rss = new RssSampler(server.pid);
      // The 1-process clubhouse runs in the same rounds, so the scaling figure is not skewed by
      // whatever else the machine did during the first case.
      const [reference, subject, single] = (await alternate(
        [
          {
            label: 'baseline WORKERS=2',
            measure: wrkLoad(baseline2, 'check.lua', '/api/auth/check', big.loadFile),
          },
          {
            label: 'clubhouse WORKERS=2',
            measure: wrkLoad(server, 'check.lua', '/api/auth/check', big.loadFile),
          },
          {
            label: 'clubhouse 1 process',
            measure: wrkLoad(clubhouse, 'check.lua', '/api/auth/check', big.loadFile),
          },
        ],
        SCHEDULE,
        log,
      )) as [Side, Side, Side];
      rss.stop();
      const workers: Comparison = { reference, subject, ratios: ratiosOf(subject, reference) };
      const scaling = ratiosOf(subject, single);
      const vsSingle = median(scaling);
      cases.push(
        row(
          'WORKERS=2: GET /api/auth/check, valid session',
          workers,
          [
            atLeast('≥ 1.25× the 1-process check', vsSingle, 1.25),
            { target: 'vs 2-process baseline', actual: `${fixed(ratioOf(workers), 2)}×`, pass: null },
          ],
          [
            `the 1-process clubhouse in the same rounds: ${Math.round(medianRound(single).rate)} req/s ` +
              `(p99 ${fixed(medianRound(single).p99Ms, 2)} ms); WORKERS=2 / 1 process per round: ` +
              `${scaling.map((r) => fixed(r, 2)).join(', ')}; vs the first case's figure: ` +
              `${checkValid === null ? '–' : fixed(medianRound(subject).rate / medianRound(checkValid.subject).rate, 2)}×`,
            ...unexpectedErrors(workers, false),
          ],
        ),
      );
      const perWorker = server.servingPids().map(memoryOf);
      const sum = sumMemory(perWorker);
      workersMemory = {
        name: 'clubhouse WORKERS=2, 1 000 000 sessions (sum over workers)',
        peak: sum.hwm,
        detail:
          `VmHWM per worker ${perWorker.map((m) => fixed(m.hwm / MIB, 1)).join(' + ')} MiB; ` +
          `primary ${fixed(memoryOf(server.pid).hwm / MIB, 1)} MiB; primary and workers: ${sampled(rss)}`,
        verdict: null,
      };
      await stopServer(cleanup, server);
    } else {
      cases.push(
        row('WORKERS=2: GET /api/auth/check, valid session', null, [
          { target: '≥ 1.25× the 1-process check', actual: `not available: ${workersProblem}`, pass: null },
        ]),
      );
      workersMemory = { name: 'clubhouse WORKERS=2', peak: null, detail: workersProblem, verdict: null };
    }
    await stopServer(cleanup, baseline2);
  }
  clubhouseRss.stop();
  const bigMemory = memoryOf(clubhouse.pid);
  await stopServer(cleanup, clubhouse);

  const memory: MemoryRow[] = [
    {
      name: 'clubhouse, 1 process, idle after start',
      peak: idleMemory.rss,
      detail:
        `VmRSS 1 s after start and one sanity request, before any load: anonymous ${fixed(idleMemory.anon / MIB, 1)} ` +
        `+ file-backed ${fixed(idleMemory.file / MIB, 1)} MiB`,
      verdict: null,
    },
  ];
  if (loginRss !== null) {
    memory.push({
      name: `clubhouse, 1 process, under login load (${LOGIN_CONCURRENCY} at once)`,
      peak: loginRss.peak.rss,
      detail: `${sampled(loginRss)}, sampled every 100 ms during the login case`,
      verdict: null,
    });
  }
  if (runs('memory'))
    memory.push(
      {
        name: 'clubhouse, 1 process, 1 000 000 sessions',
        peak: bigMemory.hwm,
        detail:
          `VmHWM over every case above; ${sampled(clubhouseRss)} (file-backed: the pages of the SQLite file ` +
          'mapped through mmap_size, and of the node binary)',
        verdict: {
          target: '≤ 150 MiB',
          actual: `${fixed(bigMemory.hwm / MIB, 1)} MiB`,
          pass: bigMemory.hwm <= 150 * MIB,
        },
      },
      {
        name: 'baseline, 1 process',
        peak: baselineMemory.hwm,
        detail: `VmHWM; ${sampled(baselineRss)}`,
        verdict: null,
      },
    );
  if (smallMemory !== null && smallRss !== null) {
    memory.push({
      name: 'clubhouse, 1 process, 1 000 sessions',
      peak: smallMemory.hwm,
      detail: `VmHWM (check load only); ${sampled(smallRss)}`,
      verdict: null,
    });
  }
  if (workersMemory !== null) memory.push(workersMemory);

  const loadAfter = os.loadavg()[0]!;
  const busy = cases.flatMap((c) => c.comparison?.subject.rounds ?? []).map((r) => r.machineBusy);
  if (median(busy) > 0.9) {
    observations.push(
      `The machine's ${os.availableParallelism()} cores were ${Math.round(median(busy) * 100)} % busy (median over ` +
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

  const dirty = sh('git', ['status', '--porcelain']) !== '';
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format syntax
  const wrkVersion = sh('dpkg-query', ['-W', '-f', '${Version}', 'wrk']);
  const cpuModel = /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '?';
  const report = renderReport({
    cores: os.availableParallelism(),
    machine: [
      `Machine: ${sh('nproc', [])} CPUs (nproc), ${cpuModel}, ${fixed(os.totalmem() / 1024 ** 3, 1)} GiB RAM`,
      `Node ${sh(NODE, ['--version'])} (node_modules/.bin/node), wrk ${wrkVersion}, Dovecot ${sh('/usr/sbin/dovecot', ['--version'])}`,
      `Date ${startedAt.toISOString()}; commit ${sh('git', ['rev-parse', '--short', 'HEAD'])}${dirty ? ' (dirty work tree)' : ''}`,
      `1-minute load average ${fixed(loadBefore, 2)} before, ${fixed(loadAfter, 2)} after; seeding took ${fixed(big.seconds, 1)} s`,
    ],
    method: [
      `wrk -t${THREADS} -c${CONNECTIONS}; logins: a closed loop of ${LOGIN_CONCURRENCY} concurrent clients (bench/login-load.ts)`,
      `${SCHEDULE.warmupSeconds} s warm-up per server, then ${SCHEDULE.rounds} round(s) of ${SCHEDULE.roundSeconds} s alternating reference and clubhouse${QUICK ? ' (BENCH_QUICK)' : ''}${ONLY.length > 0 ? ` (BENCH_ONLY=${ONLY.join(',')})` : ''}`,
      'Figures are medians over the rounds; the ratio is the median of the per-round ratios (clubhouse / reference of the same round)',
      `Database: ${BIG.sessions.toLocaleString('en-US')} sessions over ${BIG.users.toLocaleString('en-US')} users, ${BIG.groups.toLocaleString('en-US')} groups, ${BIG.groupsPerUser} memberships per user; the load rotates over ${BIG.loadSessions.toLocaleString('en-US')} sessions, one per user`,
      'Baseline: bare node:http answering 200 `"alice"` with the same headers as check (bench/baseline.ts)',
    ],
    cases,
    memory,
    observations,
  });
  return report;
}

const cleanup: Cleanup = { servers: [], dovecot: null, dir: null };
let exitCode = 0;
try {
  const report = await main(cleanup);
  mkdirSync(path.dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, report);
  process.stdout.write(report);
  log(`written to ${path.relative(process.cwd(), RESULTS)}`);
} catch (err) {
  log(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  exitCode = 1;
} finally {
  for (const server of cleanup.servers) await server.stop().catch(() => undefined);
  await cleanup.dovecot?.stop().catch(() => undefined);
  if (cleanup.dir !== null) removeNow(cleanup.dir);
}
process.exit(exitCode);
