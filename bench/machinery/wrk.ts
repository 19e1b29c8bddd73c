// Runs wrk with one of the Lua scripts of wrk/ and reads the line their done() prints.
import path from 'node:path';
import { spawnManaged } from '../../test/helpers/child.ts';
import { cpuSecondsOfTree } from './procs.ts';

export const WRK_BIN = '/usr/bin/wrk';
const SCRIPTS = path.join(import.meta.dirname, 'wrk');

export interface WrkOptions {
  /** Full URL; its path is what no-cookie.lua requests. */
  readonly url: string;
  /** File name under wrk/. */
  readonly script: string;
  /** The load file the script reads (seed.ts). */
  readonly loadFile: string;
  readonly seconds: number;
  readonly connections: number;
  readonly threads: number;
}

export interface WrkResult {
  readonly requests: number;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Responses with a status above 399. */
  readonly non2xx: number;
  /** Connect, read, write errors and timeouts. */
  readonly socketErrors: number;
  /** CPU wrk itself used, in cores (1 = one core busy the whole run). */
  readonly wrkCores: number;
}

/** One wrk run; rejects when wrk fails or prints no result line. */
export async function runWrk(options: WrkOptions): Promise<WrkResult> {
  const args = [
    `-t${options.threads}`,
    `-c${options.connections}`,
    `-d${options.seconds}s`,
    '--timeout',
    '5s',
    '-s',
    path.join(SCRIPTS, options.script),
    options.url,
    '--',
    options.loadFile,
  ];
  const wrk = spawnManaged(WRK_BIN, args);
  const pid = wrk.child.pid ?? 0;
  // wrk's own CPU time, read until just before it exits (its /proc entry goes with it).
  let cpu = 0;
  const poll = setInterval(() => {
    cpu = Math.max(cpu, cpuSecondsOfTree(pid));
  }, 250);
  const started = performance.now();
  const code = await wrk.exited;
  clearInterval(poll);
  const elapsed = (performance.now() - started) / 1000;
  const output = await wrk.finalOutput();
  const line = /^BENCH (.*)$/m.exec(output)?.[1];
  if (code !== 0 || line === undefined) throw new Error(`wrk ${args.join(' ')} failed (${code}):\n${output}`);
  const fields = Object.fromEntries(line.split(' ').map((pair) => pair.split('=') as [string, string]));
  const num = (name: string) => Number(fields[name] ?? Number.NaN);
  return {
    requests: num('requests'),
    requestsPerSecond: num('requests') / (num('duration_us') / 1e6),
    p50Ms: num('p50_us') / 1000,
    p99Ms: num('p99_us') / 1000,
    non2xx: num('non2xx'),
    socketErrors: num('connect_errors') + num('read_errors') + num('write_errors') + num('timeouts'),
    wrkCores: cpu / elapsed,
  };
}
