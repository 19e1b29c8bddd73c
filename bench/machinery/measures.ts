// How one side of a case is loaded and measured: wrk against a server, or the login loop
// (login-load.ts) against clubhouse or straight against Dovecot, each with the CPU that the server,
// the load generator and the whole machine used meanwhile; and the checks run before.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { spawnManaged } from '../../test/helpers/child.ts';
import type { Dovecot } from '../../test/helpers/dovecot.ts';
import type { Measure, Round } from './compare.ts';
import type { LoginLoadResult } from './login-load.ts';
import { childrenOf, cpuSecondsOfTree, machineTicks } from './procs.ts';
import { username } from './seed.ts';
import { NODE, type Server } from './servers.ts';
import { runWrk } from './wrk.ts';

export const CONNECTIONS = 50;
export const THREADS = 2;
const ROOT = path.join(import.meta.dirname, '..', '..');

/** A process tree whose CPU (and, for a server, stdout) a round counts. */
export interface Watched {
  readonly pid: number;
  /** Count the CPU of children it already waited for too (Dovecot's per-login processes). */
  readonly reaped?: boolean;
  logBytes?(): number;
  resetLog?(): void;
}

/** What a load run reports before the CPU and log figures are added. */
export type LoadFigures = Omit<Round, 'serverCores' | 'serverCpuSeconds' | 'logBytes' | 'machineBusy'>;

/** Runs `work` while counting the CPU and log bytes of `watched` and the CPU of the whole machine. */
export async function withCpu(watched: readonly Watched[], work: () => Promise<LoadFigures>): Promise<Round> {
  // Between rounds the servers are idle, so an empty log file now counts this round only.
  for (const w of watched) w.resetLog?.();
  const cpu = () => watched.reduce((sum, w) => sum + cpuSecondsOfTree(w.pid, w.reaped ?? false), 0);
  const cpuBefore = cpu();
  const [busyBefore, totalBefore] = machineTicks();
  const started = performance.now();
  const result = await work();
  const elapsed = (performance.now() - started) / 1000;
  const [busyAfter, totalAfter] = machineTicks();
  const serverCpuSeconds = watched.length === 0 ? Number.NaN : cpu() - cpuBefore;
  const logged = watched.filter((w) => w.logBytes !== undefined);
  return {
    ...result,
    serverCores: serverCpuSeconds / elapsed,
    serverCpuSeconds,
    logBytes: logged.length === 0 ? Number.NaN : logged.reduce((sum, w) => sum + w.logBytes!(), 0),
    machineBusy: (busyAfter - busyBefore) / (totalAfter - totalBefore),
  };
}

export function assertRunning(server: Server): void {
  if (!server.running()) throw new Error(`${server.label} died under load:\n${server.output()}`);
}

/**
 * wrk with `script` against `urlPath` of each server at once, one wrk per server sharing the
 * threads and connections (two instances: two wrk of -t1 -c25); rates and counts are summed, the
 * latencies are the worse of the servers'.
 */
export function wrkLoad(
  target: Server | readonly Server[],
  script: string,
  urlPath: string,
  loadFile: string,
): Measure {
  const servers: readonly Server[] = 'pid' in target ? [target] : target;
  const share = (n: number) => Math.max(1, Math.round(n / servers.length));
  return (seconds) =>
    withCpu(servers, async () => {
      const results = await Promise.all(
        servers.map((server) =>
          runWrk({
            url: `${server.url}${urlPath}`,
            script,
            loadFile,
            seconds,
            connections: share(CONNECTIONS),
            threads: share(THREADS),
          }),
        ),
      );
      for (const server of servers) assertRunning(server);
      const sum = (pick: (r: (typeof results)[number]) => number) => results.reduce((a, r) => a + pick(r), 0);
      return {
        rate: sum((r) => r.requestsPerSecond),
        requests: sum((r) => r.requests),
        p50Ms: Math.max(...results.map((r) => r.p50Ms)),
        p99Ms: Math.max(...results.map((r) => r.p99Ms)),
        non2xx: sum((r) => r.non2xx),
        errors: sum((r) => r.socketErrors),
        clientCores: sum((r) => r.wrkCores),
      };
    });
}

/** login-load.ts in its own process; `args` after the mode. */
export async function loginLoad(
  mode: 'http' | 'imap' | 'ldap' | 'passkey',
  args: string[],
): Promise<LoginLoadResult & { cores: number }> {
  const child = spawnManaged(
    NODE,
    ['--disable-warning=ExperimentalWarning', 'bench/machinery/login-load.ts', mode, ...args],
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
): LoadFigures {
  for (const [reason, n] of Object.entries(result.failures)) failures[reason] = (failures[reason] ?? 0) + n;
  return {
    rate: result.loginsPerSecond,
    requests: result.logins,
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
