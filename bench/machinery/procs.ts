// What /proc says about the benchmark's processes: their children (cluster workers), memory
// (VmRSS, VmHWM) and CPU time, and how busy the whole machine is.
import { readdirSync, readFileSync } from 'node:fs';

const CLOCK_TICKS = 100; // USER_HZ on Linux

function read(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** The fields of /proc/PID/stat after the command name (field 3, the state, is index 0). */
function statFields(pid: number): string[] | null {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === null) return null;
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** Direct children of `pid` (scans /proc: /proc/PID/task/TID/children is not always there). */
export function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (fields !== null && Number(fields[1]) === pid && fields[0] !== 'Z') children.push(Number(entry));
  }
  return children;
}

/** The child of `parent` whose command line (arguments joined by spaces) contains every one of `parts`. */
export function childWith(parent: number, parts: readonly string[]): number | null {
  for (const pid of childrenOf(parent)) {
    const commandLine = read(`/proc/${pid}/cmdline`)?.replaceAll('\0', ' ') ?? '';
    if (parts.every((part) => commandLine.includes(part))) return pid;
  }
  return null;
}

export interface Memory {
  /** Bytes resident now. */
  readonly rss: number;
  /** Peak resident bytes over the process's life (VmHWM). */
  readonly hwm: number;
  readonly anon: number;
  /** File-backed pages, e.g. the SQLite file mapped through mmap_size. */
  readonly file: number;
}

const ZERO: Memory = { rss: 0, hwm: 0, anon: 0, file: 0 };

/** Memory of one process from /proc/PID/status; zeros once it is gone. */
export function memoryOf(pid: number): Memory {
  const status = read(`/proc/${pid}/status`);
  if (status === null) return ZERO;
  const kib = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rss: kib('VmRSS'), hwm: kib('VmHWM'), anon: kib('RssAnon'), file: kib('RssFile') };
}

export function sumMemory(memories: readonly Memory[]): Memory {
  return memories.reduce(
    (sum, m) => ({
      rss: sum.rss + m.rss,
      hwm: sum.hwm + m.hwm,
      anon: sum.anon + m.anon,
      file: sum.file + m.file,
    }),
    ZERO,
  );
}

/**
 * User + system CPU seconds used so far by `pid` and its direct children (workers); with
 * `reaped`, also by the children it has already waited for (Dovecot's per-login processes).
 */
export function cpuSecondsOfTree(pid: number, reaped = false): number {
  let ticks = 0;
  for (const p of [pid, ...childrenOf(pid)]) {
    const fields = statFields(p);
    if (fields === null) continue;
    ticks += Number(fields[11]) + Number(fields[12]);
    if (reaped && p === pid) ticks += Number(fields[13]) + Number(fields[14]);
  }
  return ticks / CLOCK_TICKS;
}

/** [busy, total] jiffies of all CPUs since boot, from /proc/stat. */
export function machineTicks(): [number, number] {
  const line = read('/proc/stat')?.split('\n', 1)[0] ?? '';
  const values = line.trim().split(/\s+/).slice(1).map(Number);
  const total = values.reduce((a, b) => a + b, 0);
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  return [total - idle, total];
}

/**
 * Polls the resident memory of servers and their workers while they run, keeping the peak of the
 * sum (VmHWM per process is also read at the end, but peaks of different processes need not coincide).
 */
class RssSampler {
  readonly #pids: readonly number[];
  readonly #timer: NodeJS.Timeout;
  /** Largest sum of VmRSS seen, with its breakdown. */
  peak: Memory = ZERO;

  constructor(pids: number | readonly number[], intervalMs = 200) {
    this.#pids = typeof pids === 'number' ? [pids] : pids;
    this.#timer = setInterval(() => this.sample(), intervalMs);
    this.#timer.unref();
  }

  sample(): void {
    const now = sumMemory(this.#pids.flatMap((pid) => [pid, ...childrenOf(pid)]).map(memoryOf));
    if (now.rss > this.peak.rss) this.peak = now;
  }

  stop(): void {
    this.sample();
    clearInterval(this.#timer);
  }
}

/** Runs `work` while sampling the summed VmRSS of each group of pids; returns the peaks in bytes. */
export async function peaksDuring<T>(
  groups: readonly (readonly number[])[],
  work: () => Promise<T>,
): Promise<{ result: T; peaks: number[] }> {
  const samplers = groups.map((pids) => new RssSampler(pids));
  let result: T;
  try {
    result = await work();
  } finally {
    for (const sampler of samplers) sampler.stop();
  }
  return { result, peaks: samplers.map((sampler) => sampler.peak.rss) };
}
