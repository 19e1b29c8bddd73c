// How one side of a case is loaded and measured: wrk against a server, or the login loop
// (bench/login-load.ts) against clubhouse or straight against Dovecot, each with the CPU that the
// server, the load generator and the whole machine used meanwhile; and the checks run before.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { spawnManaged } from '../test/helpers/child.ts';
import type { Dovecot } from '../test/helpers/dovecot.ts';
import type { Measure, Round } from './compare.ts';
import type { LoginLoadResult } from './login-load.ts';
import { childrenOf, cpuSecondsOfTree, machineTicks } from './procs.ts';
import { username } from './seed.ts';
import { NODE, type Server } from './servers.ts';
import { runWrk } from './wrk.ts';

export const CONNECTIONS = 50;
export const THREADS = 2;
const ROOT = path.join(import.meta.dirname, '..');

/** Runs `work` while counting the CPU of the process tree `pid` and of the whole machine. */
export async function withCpu(
  pid: number | null,
  reaped: boolean,
  work: () => Promise<Omit<Round, 'serverCores' | 'machineBusy'>>,
): Promise<Round> {
  const cpuBefore = pid === null ? 0 : cpuSecondsOfTree(pid, reaped);
  const [busyBefore, totalBefore] = machineTicks();
  const started = performance.now();
  const result = await work();
  const elapsed = (performance.now() - started) / 1000;
  const [busyAfter, totalAfter] = machineTicks();
  const serverCores = pid === null ? Number.NaN : (cpuSecondsOfTree(pid, reaped) - cpuBefore) / elapsed;
  return { ...result, serverCores, machineBusy: (busyAfter - busyBefore) / (totalAfter - totalBefore) };
}

export function assertRunning(server: Server): void {
  if (!server.running()) throw new Error(`${server.label} died under load:\n${server.output()}`);
}

/** wrk with `script` against `server` at `urlPath`. */
export function wrkLoad(server: Server, script: string, urlPath: string, loadFile: string): Measure {
  return (seconds) =>
    withCpu(server.pid, false, async () => {
      const result = await runWrk({
        url: `${server.url}${urlPath}`,
        script,
        loadFile,
        seconds,
        connections: CONNECTIONS,
        threads: THREADS,
      });
      assertRunning(server);
      return {
        rate: result.requestsPerSecond,
        p50Ms: result.p50Ms,
        p99Ms: result.p99Ms,
        non2xx: result.non2xx,
        errors: result.socketErrors,
        clientCores: result.wrkCores,
      };
    });
}

/** bench/login-load.ts in its own process; `args` after the mode. */
export async function loginLoad(
  mode: 'http' | 'imap' | 'ldap',
  args: string[],
): Promise<LoginLoadResult & { cores: number }> {
  const child = spawnManaged(
    NODE,
    ['--disable-warning=ExperimentalWarning', 'bench/login-load.ts', mode, ...args],
    {
      cwd: ROOT,
    },
  );
  const pid = child.child.pid ?? 0;
  let cpu = 0;
  const poll = setInterval(() => {
    cpu = Math.max(cpu, cpuSecondsOfTree(pid));
  }, 250);
  const started = performance.now();
  const code = await child.exited;
  clearInterval(poll);
  const output = await child.finalOutput();
  const line = output
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{'));
  if (code !== 0 || line === undefined) throw new Error(`login-load ${mode} failed (${code}):\n${output}`);
  return { ...(JSON.parse(line) as LoginLoadResult), cores: cpu / ((performance.now() - started) / 1000) };
}

/** A login-load result as a round; its failures are added to `failures` (reason → count). */
export function loginRound(
  result: LoginLoadResult & { cores: number },
  failures: Record<string, number>,
): Omit<Round, 'serverCores' | 'machineBusy'> {
  for (const [reason, n] of Object.entries(result.failures)) failures[reason] = (failures[reason] ?? 0) + n;
  return {
    rate: result.loginsPerSecond,
    p50Ms: result.loginP50Ms,
    p99Ms: result.loginP99Ms,
    non2xx: Object.values(result.failures).reduce((a, b) => a + b, 0),
    errors: 0,
    clientCores: result.cores,
  };
}

/** The pid of the harness Dovecot's master process (a child of this process). */
export function dovecotPid(dovecot: Dovecot): number | null {
  for (const pid of childrenOf(process.pid)) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dovecot.dir)) return pid;
    } catch {
      // Gone meanwhile.
    }
  }
  return null;
}

/** The first load session must be load00000's and see its groups: otherwise the figures mean nothing. */
export async function sanityCheck(server: Server, loadFile: string): Promise<void> {
  const [id, group] = readFileSync(loadFile, 'utf8').split('\n', 1)[0]!.split(' ');
  const headers = { cookie: `sessionid=${id}` };
  const check = await fetch(`${server.url}/api/auth/check`, { headers });
  const body = await check.text();
  if (check.status !== 200 || body !== JSON.stringify(username(0))) {
    throw new Error(`${server.label}: check with a seeded session answered ${check.status} ${body}`);
  }
  const detail = await fetch(`${server.url}/api/group/${group}`, { headers });
  const json = (await detail.json()) as { member_status?: number };
  if (detail.status !== 200 || (json.member_status !== 1 && json.member_status !== 2)) {
    throw new Error(`${server.label}: group ${group} answered ${detail.status} ${JSON.stringify(json)}`);
  }
}

/** Header names clubhouse sends on check that the baseline does not, or the other way round. */
export async function headerDifference(
  baseline: Server,
  clubhouse: Server,
  loadFile: string,
): Promise<string[]> {
  const id = readFileSync(loadFile, 'utf8').split(' ', 1)[0]!;
  const names = async (server: Server) => {
    const response = await fetch(`${server.url}/api/auth/check`, { headers: { cookie: `sessionid=${id}` } });
    await response.text();
    return new Set(
      [...response.headers.keys()].filter((n) => !['date', 'connection', 'keep-alive'].includes(n)),
    );
  };
  const [a, b] = [await names(baseline), await names(clubhouse)];
  return [
    ...[...b].filter((n) => !a.has(n)).map((n) => `+${n}`),
    ...[...a].filter((n) => !b.has(n)).map((n) => `-${n}`),
  ];
}
