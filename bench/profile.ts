// npm run bench:profile: where clubhouse's time goes per request, beside the baseline's (the bare
// node:http server sending clubhouse's own answers, bench/machinery/baseline.ts), case by case. Seeds
// the bench's database (1 000 000 sessions, 100 000 groups), starts clubhouse as `npm start` runs it
// (its default settings) and the baseline, each with node's --cpu-prof, loads each with the bench's
// wrk scripts (a warm-up of at least 2 s that reads every session of the rotation twice, then the
// measured run), stops it (the profile is written at exit), and prints, from the samples of the measured run only, each side's time per request by file and by
// function: what clubhouse does that the baseline does not, and beside them the baseline per session
// (each session's own answers, found by its cookie: baseline.ts), a correct server that does nothing
// else. PROFILE_CASES=check,no-cookie,groups,detail (default: all), PROFILE_SECONDS (default 10),
// PROFILE_STORES=sqlite (default), postgres (the database on a private PostgreSQL) or redis (and SESSION_STORE on a private Redis): one
// clubhouse on the shared stores, seeded as the bench's instances case seeds them. The .cpuprofile files are kept (paths
// printed) for a flame graph in Chrome's DevTools or speedscope. A sample is wall time on the main
// thread: on a busy host it includes what the machine makes the process wait, as users would see.
// PROFILE_TOOL=perf samples CPU time instead, with Linux perf (`perf record -e cpu-clock`, node's
// --perf-basic-prof naming the JavaScript): every thread of the process, only while it runs, kernel,
// garbage collector and V8's builtins included. Where the V8 profile lands a wait (the main thread
// preempted inside `writev` while wrk runs) on a function, this one counts only the CPU the process
// spent, which is what the bench's ratios follow. The perf.data files are kept (`perf report -i`).
// PROFILE_TOOL=callgrind counts instructions instead (valgrind's callgrind, user space, the main
// thread: V8's background compiles and concurrent marking left out, as they come in bursts), over
// one connection so that each turn of the event loop serves one request: a count that moves far less
// than time does on a shared host. It shows what work clubhouse does, not what a cache miss costs
// it; the counts are kept (`callgrind_annotate`).
// PROFILE_TOOL=gc counts the garbage collector's work instead, from node's --trace-gc lines of the
// measured run: how many young and full collections, their pauses per request, the bytes each young
// collection freed (about what was allocated per request), and the process's peak RSS. Unlike time,
// these hardly move with the host; the log is kept.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureDebianPackage } from '../test/helpers/apt.ts';
import { removeOnExit } from '../test/helpers/child.ts';
import { startDovecot } from '../test/helpers/dovecot.ts';
import { startPostgres } from '../test/helpers/postgres.ts';
import { startRedis } from '../test/helpers/redis.ts';
import { recordAnswers, recordSessionAnswers } from './machinery/answers.ts';
import { BIG } from './machinery/options.ts';
import { memoryOf } from './machinery/procs.ts';
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
const WANTED = (process.env['PROFILE_CASES'] ?? Object.keys(CASES).join(',')).split(',');
const STORES = process.env['PROFILE_STORES'] ?? 'sqlite';
const TOOL = process.env['PROFILE_TOOL'] ?? 'v8';
/** Under valgrind longer: V8 still compiles the hot functions (counted) after a few seconds there. */
const WARMUP_SECONDS = TOOL === 'callgrind' ? 30 : 2;
const PERF_BIN = '/usr/bin/perf';
/** perf's sampling rate: a sample per 250 µs of CPU. */
const PERF_HZ = 4000;
const VALGRIND_BIN = '/usr/bin/valgrind';
// valgrind's own scripts, from the same package.
const CALLGRIND_ANNOTATE = '/usr/bin/callgrind_annotate';
const CALLGRIND_CONTROL = '/usr/bin/callgrind_control';
const CALLGRIND_ROTATION = 1000;
/** What the tables count: µs of time (of collector pauses, for gc), or (callgrind) thousands of instructions. */
const UNIT = TOOL === 'callgrind' ? 'thousand instructions' : 'µs';
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

/** A profile's amounts (µs, or thousands of instructions) by function and by file, and the idle time. */
interface Measured {
  readonly byFunction: Map<string, number>;
  readonly byFile: Map<string, number>;
  readonly idle: number;
  readonly busy: number;
  /** PROFILE_TOOL=gc: what the collections were, beside their pauses (the amounts). */
  readonly collections?: Collections;
}

interface Collections {
  readonly young: number;
  readonly full: number;
  /** MB the young collections freed: about what was allocated meanwhile. */
  readonly youngFreedMb: number;
  /** The process's VmHWM at the end of the measured run. */
  readonly peakRssMib: number;
}

/** Sums amounts by function and by file as a profile is read; `done` gives the Measured. */
function tally() {
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  return {
    add(name: string, file: string, amount: number): void {
      byFunction.set(name, (byFunction.get(name) ?? 0) + amount);
      byFile.set(file, (byFile.get(file) ?? 0) + amount);
    },
    done(idle = 0): Measured {
      const busy = [...byFile.values()].reduce((sum, amount) => sum + amount, 0);
      return { byFunction, byFile, idle, busy };
    },
  };
}

/**
 * Time (µs) by function and by file of the samples of the measured run alone: the last SECONDS up to
 * the last sample that served a request (start-up, module loading and the warm-up left out).
 */
function measured(profile: Profile): Measured {
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
  const sums = tally();
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
    sums.add(name, file, us);
  });
  return sums.done(idle);
}

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
  const sums = tally();
  for (const line of report.split('\n')) {
    const [period, dso, sym] = line.split('\t').map((field) => field.trim());
    if (period === undefined || !/^\d+$/.test(period) || dso === undefined || sym === undefined) continue;
    const us = Number(period) / 1000;
    const symbol = sym.replace(/^\[.\]\s*/, '');
    const { name, file } = perfSymbol(dso, sym.startsWith('[k]'), symbol);
    sums.add(name, file, us);
  }
  return sums.done();
}

// A --trace-gc line: "[pid:0x…]  1234 ms: Scavenge 152.0 (156.0) -> 150.2 (156.0) MB, pooled: 16 MB,
// 0.42 / 0.00 ms  (average mu = …) task;" (a full collection: "Mark-Compact … MB, 12.3 / 0.0 ms
// (+ 20.1 ms in 30 steps since start of marking, …) … finalize incremental marking via task; …").
const GC_LINE =
  /: (Scavenge|Minor Mark-Sweep|Mark-Compact(?: \(reduce\))?|Mark-Sweep) ([\d.]+) \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ [\d.]+ ms(?:\s+\(\+ ([\d.]+) ms in \d+ steps)?.*current mu = [\d.]+\)\s*(.*?);?\s*$/;

/**
 * The collections of the measured run, from its --trace-gc lines: their pauses (ms, with a full
 * collection's incremental steps on the main thread) by kind and by kind and reason, in µs.
 */
function gcMeasured(log: string, peakRssMib: number): Measured {
  const sums = tally();
  let young = 0;
  let full = 0;
  let youngFreedMb = 0;
  for (const line of log.split('\n')) {
    const gc = GC_LINE.exec(line);
    if (gc === null) continue;
    const [, kind, before, after, pause, steps, reason] = gc;
    const isYoung = kind === 'Scavenge' || kind === 'Minor Mark-Sweep';
    if (isYoung) {
      young++;
      youngFreedMb += Number(before) - Number(after);
    } else full++;
    const us = (Number(pause) + Number(steps ?? 0)) * 1000;
    const generation = isYoung ? '(young generation)' : '(whole heap)';
    sums.add(`${kind}: ${reason?.trim() || '(no reason given)'}`, `${generation} ${kind}`, us);
  }
  return { ...sums.done(), collections: { young, full, youngFreedMb, peakRssMib } };
}

const GC_SYMBOL = /Scaveng|MarkCompact|Sweeper|Marking|ConcurrentMark|Heap::|Evacuat|MemoryAllocator/;
/** V8's compilers and parser: they run until the hot code is compiled, then hardly at all. */
const COMPILER_SYMBOL = /compiler::|maglev::|baseline::|Compiler|Parser::|Scanner|Bytecode|interpreter::/;

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
    `| ${title} | ${sides.map((side) => `${side.label}, ${UNIT} per request`).join(' | ')} |`,
    `|---|${sides.map(() => '---:').join('|')}|`,
    ...rows,
    `| all but idle | ${sides.map((side) => (side.profile.busy / side.requests).toFixed(2)).join(' | ')} |`,
  ].join('\n');
}

/**
 * The same tables from a callgrind dump, in thousands of instructions: a function is a symbol (V8's
 * generated code, JavaScript included, has none: one row), a file what kind of code it is.
 */
function callgrindMeasured(dump: string): Measured {
  const report = execFileSync(CALLGRIND_ANNOTATE, ['--inclusive=no', '--threshold=100', dump], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const sums = tally();
  for (const line of report.split('\n')) {
    // "  18,265,072 ( 4.84%)  file:function [object]"
    const row = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*?)(?: \[([^\]]*)\])?$/.exec(line);
    if (row === null || row[2] === 'PROGRAM TOTALS') continue;
    const kIr = Number(row[1]!.replaceAll(',', '')) / 1000;
    const object = row[3] ?? '???';
    // The file before the first single colon (C++ names hold "::").
    const symbol = row[2]!.replace(/^.*?(?<!:):(?!:)/, '');
    let name = withoutArguments(symbol);
    let file: string;
    if (/^0x[0-9a-f]+$/.test(symbol)) {
      name = '(V8 generated code: JavaScript, regular expressions, stubs)';
      file = name;
    } else if (object.endsWith('/node')) {
      file = GC_SYMBOL.test(symbol)
        ? '(garbage collector)'
        : COMPILER_SYMBOL.test(symbol)
          ? '(V8 compilers)'
          : '(node and V8: C++, builtins)';
    } else {
      file = `(${path.basename(object)})`;
    }
    sums.add(name, file, kIr);
  }
  return sums.done();
}

/** A C++ symbol without its argument list ("ns::(anonymous namespace)::f(int) const": "ns::(anonymous namespace)::f"). */
function withoutArguments(symbol: string): string {
  let depth = 0;
  for (let i = symbol.lastIndexOf(')'); i >= 0; i--) {
    if (symbol[i] === ')') depth++;
    else if (symbol[i] === '(' && --depth === 0) return symbol.slice(0, i);
  }
  return symbol;
}

interface Side {
  readonly label: string;
  readonly requests: number;
  readonly rate: number;
  readonly profile: Measured;
  readonly file: string;
}

/** What a side's profile counted per request, in the tool's terms. */
function perRequest({ profile, requests }: Side): string {
  const busy = (profile.busy / requests).toFixed(1);
  const { collections } = profile;
  if (collections !== undefined) {
    const { young, full, youngFreedMb, peakRssMib } = collections;
    return [
      `${busy} µs of collector pauses per request`,
      `${((young / requests) * 1000).toFixed(2)} young collections per 1 000 requests, each freeing ${(youngFreedMb / young).toFixed(1)} MB (${((youngFreedMb * 1024) / requests).toFixed(1)} KiB allocated per request)`,
      `${full} full collections`,
      `peak RSS ${peakRssMib.toFixed(1)} MiB`,
    ].join('; ');
  }
  if (TOOL === 'perf') return `${busy} µs of CPU per request (every thread)`;
  if (TOOL === 'callgrind') return `${busy} ${UNIT} per request (user space, main thread, one connection)`;
  return `${busy} µs busy and ${(profile.idle / requests).toFixed(1)} µs idle per request`;
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
  const sessions = readFileSync(loadFile, 'utf8')
    .split('\n')
    .filter((line) => line !== '');
  // Under valgrind a few hundred requests a second: the first CALLGRIND_ROTATION sessions, so that the
  // warm-up still reads each twice and keeps them all (how many are kept changes no count per request).
  const rotation = TOOL === 'callgrind' ? sessions.slice(0, CALLGRIND_ROTATION) : sessions;
  const rotationFile = path.join(dir, 'rotation.txt');
  writeFileSync(rotationFile, `${rotation.join('\n')}\n`);
  const wrk =
    TOOL === 'callgrind'
      ? { url, script: load.script, loadFile: rotationFile, connections: 1, threads: 1 }
      : { url, script: load.script, loadFile: rotationFile, connections: 50, threads: 2 };
  // Until every session of the rotation was read twice (on a crowded host a few seconds are not enough).
  const least = 2 * rotation.length;
  const first = await runWrk({ ...wrk, seconds: WARMUP_SECONDS });
  // Each run starts the rotation over (wrk/common.lua): one run long enough to read it all.
  if (first.requests < least && first.requestsPerSecond > 0)
    await runWrk({ ...wrk, seconds: Math.min(90, Math.ceil((least / first.requestsPerSecond) * 1.2)) });
  if (TOOL === 'gc') {
    // The log from here on is the measured run's (the server is idle between wrk runs).
    server.resetLog();
    const run = await runWrk({ ...wrk, seconds: SECONDS });
    const peak = memoryOf(server.pid).hwm / (1024 * 1024);
    const log = server.log();
    await server.stop();
    const file = path.join(dir, 'trace-gc.log');
    writeFileSync(file, log);
    return {
      label,
      requests: run.requests,
      rate: run.requestsPerSecond,
      profile: gcMeasured(log, peak),
      file,
    };
  }
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
  if (TOOL === 'callgrind') {
    // Counted from zero over the measured run alone, then dumped (callgrind.out.<dump>-<thread>).
    const control = (...args: string[]) =>
      execFileSync(CALLGRIND_CONTROL, [...args, String(server.pid)], { stdio: 'ignore' });
    control('-z');
    control('-i', 'on');
    const run = await runWrk({ ...wrk, seconds: SECONDS });
    control('-i', 'off');
    control('-d');
    await server.stop();
    // callgrind.out.<dump>-<thread>: the main thread is 01.
    const part = (entry: string) => Number(/^callgrind\.out\.(\d+)-01$/.exec(entry)?.[1] ?? Number.NaN);
    const dumps = readdirSync(dir).filter((entry) => Number.isInteger(part(entry)));
    const dump = dumps.sort((a, b) => part(a) - part(b)).at(-1);
    if (dump === undefined) throw new Error(`no callgrind dump written for ${label}`);
    const file = path.join(dir, dump);
    return {
      label,
      requests: run.requests,
      rate: run.requestsPerSecond,
      profile: callgrindMeasured(file),
      file,
    };
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
  else if (TOOL === 'callgrind') await ensureDebianPackage(VALGRIND_BIN, 'valgrind');
  else if (TOOL !== 'v8' && TOOL !== 'gc')
    throw new Error(`PROFILE_TOOL: unknown ${TOOL} (v8, perf, callgrind or gc)`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'clubhouse-profile-'));
  removeOnExit(dir);
  process.stderr.write('seeding 1 000 000 sessions, 100 000 groups …\n');
  const big = seedDatabase(path.join(dir, 'big.db'), path.join(dir, 'load.txt'), BIG);
  const dovecot = await startDovecot({ authFailureDelay: 0 });
  const stores = await sharedStores(dir);
  const profiling = (name: string) => {
    const out = mkdtempSync(path.join(os.tmpdir(), `clubhouse-profile-${name}-`));
    if (TOOL === 'callgrind') {
      // Instrumented only while measured (-i on): start-up and warm-up run 5-10 times slower, not 50.
      const wrapper = [
        VALGRIND_BIN,
        '--tool=callgrind',
        '--smc-check=all-non-file',
        '--instr-atstart=no',
        '--separate-threads=yes',
        `--callgrind-out-file=${path.join(out, 'callgrind.out')}`,
      ];
      return { out, nodeArgs: [], wrapper };
    }
    return {
      out,
      nodeArgs:
        TOOL === 'perf'
          ? ['--perf-basic-prof']
          : TOOL === 'gc'
            ? ['--trace-gc']
            : ['--cpu-prof', `--cpu-prof-dir=${out}`],
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
    const sessionAnswers = path.join(dir, 'session-answers.json');
    await recordSessionAnswers(recorder, big.loadFile, sessionAnswers);
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
          ...('wrapper' in ours ? { wrapper: ours.wrapper } : {}),
          ...(stores?.settings === undefined ? {} : { settings: stores.settings }),
        }),
        ours.out,
        load,
        stores?.loadFile ?? big.loadFile,
      );
      const theirs = profiling(`baseline-${name}`);
      const baseline = await profiled(
        'baseline',
        await startBaseline(`baseline ${name}`, answers, 1, dir, theirs),
        theirs.out,
        load,
        big.loadFile,
      );
      const sides = [clubhouse, baseline];
      // Without a cookie the baseline per session sends the replay's own answer: nothing to add.
      if (name !== 'no-cookie') {
        const ownAnswers = profiling(`per-session-${name}`);
        sides.push(
          await profiled(
            'per session',
            await startBaseline(`baseline per session ${name}`, answers, 1, dir, {
              ...ownAnswers,
              sessionAnswers,
            }),
            ownAnswers.out,
            load,
            big.loadFile,
          ),
        );
      }
      process.stdout.write(
        [
          `## ${name}: ${load.path}, clubhouse on ${STORES} (load average ${os.loadavg()[0]!.toFixed(2)})`,
          '',
          ...sides.map(
            (side) =>
              `- ${side.label}: ${Math.round(side.rate)} requests/s, ${perRequest(side)}; ${side.file}`,
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
