// A private rootful podman for the deploy test: its own configuration, image store, run state,
// volumes and networks under one directory, so that the test touches nothing else on the machine
// and its cleanup is total (every container, image, volume and network goes with the directory).
// A run that died before cleaning up is swept by the next one (see sweepAbandonedRuns).
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureDebianPackage } from '../helpers/apt.ts';

const run = promisify(execFile);

/** Where every run keeps its private podman; one directory per run, named by its pid. */
const RUNS_DIR = '/var/tmp/clubhouse-deploy-test';

/** The label on everything the test creates itself (containers, volumes, networks). */
export const TEST_LABEL = 'clubhouse.test=deploy';

export interface Podman {
  /** The run's directory (configuration, storage, scratch files). */
  readonly dir: string;
  /** The environment that points podman (and podman-compose, docker-compose) at this run's podman. */
  readonly env: NodeJS.ProcessEnv;
  /** Runs `podman ARGS`; rejects with podman's output on a non-zero exit. */
  podman(args: readonly string[], options?: { input?: string; timeoutMs?: number }): Promise<string>;
  /** Runs `podman ARGS`, resolving with the exit code and output whatever the code. */
  tryPodman(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** Removes every container, volume, network and image, then the run's directory. */
  cleanup(): Promise<void>;
}

/**
 * Installs podman and runc when missing, sweeps abandoned runs, then makes this run's podman.
 *
 * Rootful podman on this kind of machine needs runc (crun fails on the kernel's hybrid cgroups)
 * and resource limits it may set: the container's nofile and nproc are set equal, soft and hard,
 * to values at or below this process's (raising a limit is not permitted here; podman's own
 * defaults would raise them).
 */
export async function startPodman(): Promise<Podman> {
  await ensureDebianPackage('/usr/bin/podman', 'podman');
  await ensureDebianPackage('/usr/sbin/runc', 'runc');
  // netavark with aardvark-dns: containers on a compose network find each other by service name
  // (podman 4.3's CNI default would need a separate DNS plugin for that).
  await ensureDebianPackage('/usr/lib/podman/netavark', 'netavark');
  await ensureDebianPackage('/usr/lib/podman/aardvark-dns', 'aardvark-dns');
  await sweepAbandonedRuns();
  const dir = path.join(RUNS_DIR, `run-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(path.join(dir, 'networks'), { recursive: true });
  const nofile = Math.min(hardLimit('Max open files'), 65536);
  const nproc = Math.min(hardLimit('Max processes'), 4096);
  writeFileSync(
    path.join(dir, 'containers.conf'),
    [
      '[containers]',
      `default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]`,
      '[engine]',
      'runtime = "runc"',
      'cgroup_manager = "cgroupfs"',
      'events_logger = "file"',
      `events_logfile_path = "${dir}/events.log"`,
      `tmp_dir = "${dir}/tmp"`,
      '[network]',
      'network_backend = "netavark"',
      `network_config_dir = "${dir}/networks"`,
      '',
    ].join('\n'),
  );
  writeFileSync(
    path.join(dir, 'storage.conf'),
    ['[storage]', 'driver = "overlay"', `graphroot = "${dir}/root"`, `runroot = "${dir}/runroot"`, ''].join(
      '\n',
    ),
  );
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CONTAINERS_CONF: path.join(dir, 'containers.conf'),
    CONTAINERS_STORAGE_CONF: path.join(dir, 'storage.conf'),
    TMPDIR: path.join(dir, 'scratch'),
  };
  mkdirSync(path.join(dir, 'scratch'));
  writeFileSync(path.join(dir, 'pid'), String(process.pid));

  const tryPodman = (args: readonly string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = spawn('podman', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    });
  const podman = async (args: readonly string[], options: { input?: string; timeoutMs?: number } = {}) => {
    const child = spawn('podman', args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-64 * 1024);
    });
    child.stdin.end(options.input ?? '');
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    clearTimeout(timer);
    if (code !== 0) {
      throw new Error(
        `podman ${args.join(' ')} exited ${code}:\n${stderr.slice(-8000)}${stdout.slice(-2000)}`,
      );
    }
    return stdout;
  };
  return {
    dir,
    env,
    podman,
    tryPodman,
    cleanup: () => resetRun(dir, env),
  };
}

/** A limit of this process, from /proc/self/limits (the hard column). */
function hardLimit(name: string): number {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((candidate) => candidate.startsWith(name));
  const hard = line?.slice(26).trim().split(/\s+/)[1];
  return hard === undefined || hard === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(hard);
}

/**
 * Everything of one run goes: the labelled containers first (a sweep by label, so that even a
 * container another tool made for us is stopped), then all the rest of the private store
 * (`podman system reset` unmounts what is mounted and deletes images, volumes, networks), then
 * the directory.
 */
async function resetRun(dir: string, env: NodeJS.ProcessEnv): Promise<void> {
  const quiet = async (args: string[]) => {
    try {
      await run('podman', args, { env, maxBuffer: 16 * 1024 * 1024 });
    } catch {
      // Best effort: the reset below removes what this left.
    }
  };
  if (existsSync(path.join(dir, 'storage.conf'))) {
    await quiet(['rm', '--force', '--time', '0', '--filter', `label=${TEST_LABEL}`]);
    await quiet(['rm', '--all', '--force', '--time', '0']);
    await quiet(['system', 'reset', '--force']);
  }
  rmSync(dir, { recursive: true, force: true });
}

/** Runs whose process is gone (killed before its cleanup) are reset and removed. */
async function sweepAbandonedRuns(): Promise<void> {
  if (!existsSync(RUNS_DIR)) return;
  for (const name of readdirSync(RUNS_DIR)) {
    const dir = path.join(RUNS_DIR, name);
    let pid = Number.NaN;
    try {
      pid = Number(readFileSync(path.join(dir, 'pid'), 'utf8'));
    } catch {
      // No pid file: a run that died while it was being made.
    }
    if (Number.isInteger(pid) && pid !== process.pid && isAlive(pid)) continue;
    await resetRun(dir, {
      ...process.env,
      CONTAINERS_CONF: path.join(dir, 'containers.conf'),
      CONTAINERS_STORAGE_CONF: path.join(dir, 'storage.conf'),
    });
  }
}

/** True while process `pid` exists (signal 0 checks without signalling). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
