// npm run bench:profile: where clubhouse's time goes per request, beside the baseline's (the bare
// node:http server sending clubhouse's own answers, bench/machinery/baseline.ts), case by case. Seeds
// the bench's database (1 000 000 sessions, 100 000 groups), starts clubhouse as `npm start` runs it
// (its default settings) and the baseline, each with node's --cpu-prof, loads each with the bench's
// wrk scripts (a warm-up of at least 2 s that reads every session of the rotation twice, then the
// measured run), stops it (the profile is written at exit), and prints, from the samples of the measured run only, each side's time per request by file and by
// function: what clubhouse does that the baseline does not. PROFILE_CASES=check,no-cookie,groups,
// detail (default: all), PROFILE_SECONDS (default 10), PROFILE_STORES=sqlite (default), postgres
// (the database on a private PostgreSQL) or redis (and SESSION_STORE on a private Redis): one
// clubhouse on the shared stores, seeded as the bench's instances case seeds them. The .cpuprofile files are kept (paths
// printed) for a flame graph in Chrome's DevTools or speedscope. A sample is wall time on the main
// thread: on a busy host it includes what the machine makes the process wait, as users would see.
// PROFILE_TOOL=perf samples CPU time instead, with Linux perf (`perf record -e cpu-clock`, node's
// --perf-basic-prof naming the JavaScript): every thread of the process, only while it runs, kernel,
// garbage collector and V8's builtins included. Where the V8 profile lands a wait (the main thread
// preempted inside `writev` while wrk runs) on a function, this one counts only the CPU the process
// spent, which is what the bench's ratios follow. The perf.data files are kept (`perf report -i`).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureDebianPackage } from '../test/helpers/apt.ts';
import { removeOnExit } from '../test/helpers/child.ts';
import { startDovecot } from '../test/helpers/dovecot.ts';
import { startPostgres } from '../test/helpers/postgres.ts';
import { startRedis } from '../test/helpers/redis.ts';
import { recordAnswers } from './machinery/answers.ts';
import { BIG } from './machinery/options.ts';
import { seedDatabase } from './machinery/seed.ts';
import { seedSharedStores } from './machinery/seed-stores.ts';
import { type Server, startBaseline, startClubhouse } from './machinery/servers.ts';
import { runWrk, WRK_BIN } from './machinery/wrk.ts';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const CASES: Record<string, { readonly script: string; readonly path: string }> = {
  check: { script: 'check.lua', path: '/api/auth/check' },
  'no-cookie': { script: 'no-cookie.lua', path: '/api/auth/check' },
  groups: { script: 'group-list.lua', path: '/api/group/' },
  detail: { script: 'group-detail.lua', path: '/api/group/1' },
};
const SECONDS = Number(process.env['PROFILE_SECONDS'] ?? '10');
const WARMUP_SECONDS = 2;
const WANTED = (process.env['PROFILE_CASES'] ?? Object.keys(CASES).join(',')).split(',');
const STORES = process.env['PROFILE_STORES'] ?? 'sqlite';
const TOOL = process.env['PROFILE_TOOL'] ?? 'v8';
const PERF_BIN = '/usr/bin/perf';
/** perf's sampling rate: a sample per 250 µs of CPU. */
const PERF_HZ = 4000;
const TOP = 30;
const ROOT = path.join(import.meta.dirname, '..');

/** A file as the tables name it: the project's own relative, packages by name, node's as node's. */
function fileOf(url: string): string {
  if (url === '') return '(native: system calls, GC, V8)';
  const local = url.startsWith('file://') ? new URL(url).pathname : url;
  const packages = local.indexOf('/node_modules/');
  if (packages >= 0) return `npm:${local.slice(packages + 14).split('/')[0]}`;
  if (local.startsWith(ROOT)) return local.slice(ROOT.length + 1);
  return local;
}

/**
 * Time (µs) by function and by file of the samples of the measured run alone: the last SECONDS up to
 * the last sample that served a request (start-up, module loading and the warm-up left out).
 */
function measured(profile: Profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const serving = (id: number) => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      if (byId.get(at)!.callFrame.functionName === 'parserOnHeadersComplete') return true;
    }
    return false;
  };
  let clock = 0;
  let lastServing = 0;
  profile.samples.forEach((id, i) => {
    clock += profile.timeDeltas[i] ?? 0;
    if (serving(id)) lastServing = clock;
  });
  const from = lastServing - SECONDS * 1e6;
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let idle = 0;
  clock = 0;
  profile.samples.forEach((id, i) => {
    clock += profile.timeDeltas[i] ?? 0;
    if (clock < from || clock > lastServing) return;
    const us = profile.timeDeltas[i + 1] ?? 0;
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') {
      idle += us;
      return;
    }
    const file = fileOf(url);
    const name = `${functionName || '(anonymous)'} ${file}${url === '' ? '' : `:${lineNumber + 1}`}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    byFile.set(file, (byFile.get(file) ?? 0) + us);
  });
  const busy = [...byFile.values()].reduce((sum, us) => sum + us, 0);
  return { byFunction, byFile, idle, busy };
}

type Measured = ReturnType<typeof measured>;

/**
 * The same tables from a perf.data of `perf record -e cpu-clock` (CPU time, every thread; nothing is
 * sampled while the process waits, so idle is 0). A function: a JavaScript function named as the V8
 * profile names it, else the symbol; a file: the JavaScript's file, else what kind of native code.
 */
function perfMeasured(data: string): Measured {
  const report = execFileSync(
    PERF_BIN,
    [
      'report',
      '-i',
      data,
      '--no-children',
      '--sort',
      'dso,sym',
      '-g',
      'none',
      '-F',
      'period,dso,sym',
      '-t',
      '\t',
      '--stdio',
    ],
    { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  for (const line of report.split('\n')) {
    const [period, dso, sym] = line.split('\t').map((field) => field.trim());
    if (period === undefined || !/^\d+$/.test(period) || dso === undefined || sym === undefined) continue;
    const us = Number(period) / 1000;
    const symbol = sym.replace(/^\[.\]\s*/, '');
    const { name, file } = perfSymbol(dso, sym.startsWith('[k]'), symbol);
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    byFile.set(file, (byFile.get(file) ?? 0) + us);
  }
  const busy = [...byFile.values()].reduce((sum, us) => sum + us, 0);
  return { byFunction, byFile, idle: 0, busy };
}

const GC_SYMBOL = /Scaveng|MarkCompact|Sweeper|Marking|ConcurrentMark|Heap::|Evacuat|MemoryAllocator/;

/** A perf sample's function and file, in the V8 tables' terms. */
function perfSymbol(dso: string, kernel: boolean, symbol: string): { name: string; file: string } {
  if (kernel) return { name: `${symbol} (kernel)`, file: '(kernel: system calls, network)' };
  // --perf-basic-prof: "JS:*'name url:line:column" (`*` optimised, `+` baseline, `~` interpreted).
  const js = /^JS:.'?(\S*) (\S+):(\d+):\d+$/.exec(symbol);
  if (js !== null) {
    const file = fileOf(js[2]!);
    return { name: `${js[1] || '(anonymous)'} ${file}:${js[3]}`, file };
  }
  if (dso.startsWith('[JIT]'))
    return { name: symbol, file: '(V8 generated code: regular expressions, stubs)' };
  if (dso === 'node' && GC_SYMBOL.test(symbol)) return { name: symbol, file: '(garbage collector)' };
  if (dso === 'node') return { name: symbol, file: '(node and V8: C++, builtins)' };
  return { name: symbol, file: `(${dso})` };
}

function table(title: string, pick: (m: Measured) => Map<string, number>, sides: readonly Side[]): string {
  const names = new Map<string, number>();
  for (const side of sides)
    for (const [name, us] of pick(side.profile))
      names.set(name, Math.max(names.get(name) ?? 0, us / side.requests));
  const rows = [...names]
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP)
    .map(
      ([name]) =>
        `| ${name} | ${sides.map((side) => ((pick(side.profile).get(name) ?? 0) / side.requests).toFixed(2)).join(' | ')} |`,
    );
  return [
    `| ${title} | ${sides.map((side) => `${side.label}, µs per request`).join(' | ')} |`,
    `|---|${sides.map(() => '---:').join('|')}|`,
    ...rows,
    `| all but idle | ${sides.map((side) => (side.profile.busy / side.requests).toFixed(2)).join(' | ')} |`,
  ].join('\n');
}

interface Side {
  readonly label: string;
  readonly requests: number;
  readonly rate: number;
  readonly profile: Measured;
  readonly file: string;
}

/** Loads `server` (warm-up, then the measured run), stops it, and reads its profile in `dir`. */
async function profiled(
  label: string,
  server: Server,
  dir: string,
  load: { script: string; path: string },
  loadFile: string,
): Promise<Side> {
  const url = `${server.url}${load.path}`;
  const wrk = { url, script: load.script, loadFile, connections: 50, threads: 2 };
  // Until every session of the rotation was read twice (on a crowded host a few seconds are not enough).
  const least =
    2 *
    readFileSync(loadFile, 'utf8')
      .split('\n')
      .filter((line) => line !== '').length;
  const first = await runWrk({ ...wrk, seconds: WARMUP_SECONDS });
  // Each run starts the rotation over (wrk/common.lua): one run long enough to read it all.
  if (first.requests < least && first.requestsPerSecond > 0)
    await runWrk({ ...wrk, seconds: Math.min(90, Math.ceil((least / first.requestsPerSecond) * 1.2)) });
  if (TOOL === 'perf') {
    const data = path.join(dir, 'perf.data');
    const perf = spawn(
      PERF_BIN,
      ['record', '-e', 'cpu-clock', '-F', String(PERF_HZ), '-o', data, '-p', String(server.pid)],
      {
        stdio: 'ignore',
      },
    );
    const exited = new Promise((resolve) => perf.on('exit', resolve));
    // perf attaches before the measured run (samples only while the process runs: none meanwhile).
    await new Promise((resolve) => setTimeout(resolve, 500));
    const run = await runWrk({ ...wrk, seconds: SECONDS });
    perf.kill('SIGINT');
    await exited;
    const profile = perfMeasured(data);
    await server.stop();
    // node's symbol map for perf (--perf-basic-prof), one per process: read, then not needed.
    rmSync(`/tmp/perf-${server.pid}.map`, { force: true });
    return { label, requests: run.requests, rate: run.requestsPerSecond, profile, file: data };
  }
  const run = await runWrk({ ...wrk, seconds: SECONDS });
  await server.stop();
  const file = readdirSync(dir).find((entry) => entry.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error(`no profile written for ${label}`);
  const profile = measured(JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as Profile);
  return { label, requests: run.requests, rate: run.requestsPerSecond, profile, file: path.join(dir, file) };
}

async function main(): Promise<void> {
  await ensureDebianPackage(WRK_BIN, 'wrk');
  if (TOOL === 'perf') await ensureDebianPackage(PERF_BIN, 'linux-perf');
  else if (TOOL !== 'v8') throw new Error(`PROFILE_TOOL: unknown ${TOOL} (v8 or perf)`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'clubhouse-profile-'));
  removeOnExit(dir);
  process.stderr.write('seeding 1 000 000 sessions, 100 000 groups …\n');
  const big = seedDatabase(path.join(dir, 'big.db'), path.join(dir, 'load.txt'), BIG);
  const dovecot = await startDovecot({ authFailureDelay: 0 });
  const stores = await sharedStores(dir);
  const profiling = (name: string) => {
    const out = mkdtempSync(path.join(os.tmpdir(), `clubhouse-profile-${name}-`));
    return {
      out,
      nodeArgs: TOOL === 'perf' ? ['--perf-basic-prof'] : ['--cpu-prof', `--cpu-prof-dir=${out}`],
    };
  };
  try {
    // The baseline sends clubhouse's own answers, recorded from a clubhouse without the profiler.
    const recorder = await startClubhouse({
      label: 'recorder',
      databaseUrl: `sqlite:${big.path}`,
      dovecot,
      dir,
    });
    const answers = path.join(dir, 'answers.json');
    await recordAnswers(recorder, big.loadFile, answers);
    await recorder.stop();
    for (const name of WANTED) {
      const load = CASES[name];
      if (load === undefined) throw new Error(`PROFILE_CASES: unknown case ${name}`);
      const ours = profiling(`clubhouse-${name}`);
      const clubhouse = await profiled(
        'clubhouse',
        await startClubhouse({
          label: `clubhouse ${name}`,
          databaseUrl: stores?.databaseUrl ?? `sqlite:${big.path}`,
          dovecot,
          dir,
          nodeArgs: ours.nodeArgs,
          ...(stores?.settings === undefined ? {} : { settings: stores.settings }),
        }),
        ours.out,
        load,
        stores?.loadFile ?? big.loadFile,
      );
      const theirs = profiling(`baseline-${name}`);
      const baseline = await profiled(
        'baseline',
        await startBaseline(`baseline ${name}`, answers, 1, dir, theirs.nodeArgs),
        theirs.out,
        load,
        big.loadFile,
      );
      const sides = [clubhouse, baseline];
      process.stdout.write(
        [
          `## ${name}: ${load.path}, clubhouse on ${STORES} (load average ${os.loadavg()[0]!.toFixed(2)})`,
          '',
          ...sides.map(
            (side) =>
              `- ${side.label}: ${Math.round(side.rate)} requests/s, ${
                TOOL === 'perf'
                  ? `${(side.profile.busy / side.requests).toFixed(1)} µs of CPU per request (every thread)`
                  : `${(side.profile.busy / side.requests).toFixed(1)} µs busy and ${(side.profile.idle / side.requests).toFixed(1)} µs idle per request`
              }; ${side.file}`,
          ),
          '',
          table('file', (m) => m.byFile, sides),
          '',
          table('function', (m) => m.byFunction, sides),
          '',
        ].join('\n'),
      );
    }
  } finally {
    await dovecot.stop();
    await stores?.stop();
  }
}

/** PROFILE_STORES=postgres or redis: private servers seeded as the instances case seeds them. */
async function sharedStores(dir: string) {
  if (STORES === 'sqlite') return null;
  if (STORES !== 'postgres' && STORES !== 'redis') throw new Error(`PROFILE_STORES: unknown ${STORES}`);
  const postgres = await startPostgres({ private: true });
  const redis = STORES === 'redis' ? await startRedis({ private: true }) : null;
  const database = await postgres.createDatabase();
  process.stderr.write(`seeding PostgreSQL${redis === null ? '' : ' and Redis'} …\n`);
  const loadFile = path.join(dir, 'load-stores.txt');
  writeFileSync(loadFile, await seedSharedStores(database.url, redis?.url ?? null, BIG));
  return {
    databaseUrl: database.url,
    settings: redis === null ? undefined : { SESSION_STORE: redis.url },
    loadFile,
    stop: async () => {
      await redis?.stop();
      await postgres.stop();
    },
  };
}

await main();
