// Server processes started by the harness, and the OS users they run as.
// Each process is killed when the test process exits, even if a test forgot
// to stop it, so no server outlives its test file (it would keep its port).
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

/** A server running as a child of the test process. */
export interface ManagedChild {
  readonly child: ChildProcess;
  /** Resolves with the exit code (or signal name) once the process is gone. */
  readonly exited: Promise<number | string>;
  /** True until the process has exited. */
  running(): boolean;
  /** Last 64 KiB of stdout and stderr, for error messages. */
  output(): string;
  /** Like output(), but first waits (briefly) for the pipes to drain after an exit. */
  finalOutput(): Promise<string>;
  /** Sends `signal`, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

const OUTPUT_LIMIT = 64 * 1024;
const live = new Map<ChildProcess, NodeJS.Signals>();
const tempDirs = new Set<string>();
let hooksInstalled = false;

/**
 * Spawns `command` in its own process group with piped output. `exitSignal` is
 * what it gets if the test process exits while it still runs (default SIGTERM).
 */
export function spawnManaged(
  command: string,
  args: readonly string[],
  options: SpawnOptions & { exitSignal?: NodeJS.Signals } = {},
): ManagedChild {
  installHooks();
  const { exitSignal = 'SIGTERM', ...spawnOptions } = options;
  // Own process group: stop() can then kill helpers the server forked that
  // outlive it (a Dovecot login process holding a client connection, say).
  const child = spawn(command, args, { ...spawnOptions, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-OUTPUT_LIMIT);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  live.set(child, exitSignal);
  let isRunning = true;
  // 'exit', not 'close': the server's own children inherit the pipes, so
  // 'close' can come much later than the server's exit.
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      isRunning = false;
      live.delete(child);
      killGroup(child, 'SIGKILL');
      resolve(code ?? signal ?? 'unknown');
    });
    child.once('error', (error) => {
      collect(Buffer.from(`spawn ${command} failed: ${error.message}\n`));
      isRunning = false;
      live.delete(child);
      resolve('spawn-error');
    });
  });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return {
    child,
    exited,
    running: () => isRunning,
    output: () => output,
    async finalOutput() {
      if (!isRunning) await Promise.race([closed, sleep(1000)]);
      return output;
    },
    async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 3000): Promise<void> {
      if (!isRunning) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // ESRCH: nothing left in the group.
  }
}

/** Registers a directory to delete if the test process exits before its owner removes it. */
export function removeOnExit(dir: string): void {
  installHooks();
  tempDirs.add(dir);
}

/** Deletes a directory registered with removeOnExit and unregisters it. */
export function removeNow(dir: string): void {
  tempDirs.delete(dir);
  rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
}

// Runs inside 'exit' or a fatal signal, where nothing async can run: signal
// every server, wait synchronously (bounded) for them to finish shutting
// down, kill whatever is left in their process groups, then delete the
// temp dirs, which nothing writes to any more.
function killAllSync(): void {
  const children = [...live];
  for (const [child, signal] of children) {
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
  }
  const deadline = Date.now() + 3000;
  const pids = children.map(([child]) => child.pid).filter((pid) => pid !== undefined);
  while (pids.some(isAliveSync) && Date.now() < deadline) sleepSync(20);
  for (const [child] of children) killGroup(child, 'SIGKILL');
  for (const dir of tempDirs) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
    } catch {
      // Best effort.
    }
  }
}

/** True while `pid` runs; a zombie counts as gone (the event loop that would reap it is over). */
function isAliveSync(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', killAllSync);
  // A signal ends the process without 'exit' (e.g. the test runner's timeout
  // or Ctrl-C): clean up, then die of the same signal as before.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killAllSync();
      process.kill(process.pid, signal);
    });
  }
}

/** uid and gid of a local account, e.g. the `dovecot` or `postgres` user a package creates. */
export async function lookupSystemUser(name: string): Promise<{ uid: number; gid: number }> {
  const passwd = await readFile('/etc/passwd', 'utf8');
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name) return { uid: Number(uid), gid: Number(gid) };
  }
  throw new Error(`no ${name} user in /etc/passwd`);
}
