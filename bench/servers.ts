// The servers under load, each a child process on a free loopback port: clubhouse itself
// (src/main.ts, as `npm start` runs it) and the bare node:http baseline (bench/baseline.ts).
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ManagedChild } from '../test/helpers/child.ts';
import { spawnManaged } from '../test/helpers/child.ts';
import type { Dovecot } from '../test/helpers/dovecot.ts';
import { canConnect, freePort } from '../test/helpers/ports.ts';
import { childrenOf } from './procs.ts';

const ROOT = path.join(import.meta.dirname, '..');
export const NODE = path.join(ROOT, 'node_modules', '.bin', 'node');
const START_TIMEOUT_MS = 30_000;

export interface Server {
  readonly label: string;
  readonly url: string;
  /** The process started (the cluster primary when workers > 1). */
  readonly pid: number;
  /** The processes that serve: the workers, or the process itself. */
  servingPids(): number[];
  /** stdout and stderr, last 64 KiB. */
  output(): string;
  running(): boolean;
  stop(): Promise<void>;
}

/** Resolves once the port accepts and `workers` children run (when > 1); rejects if the process exits. */
async function ready(child: ManagedChild, port: number, workers: number, label: string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (!child.running()) throw new Error(`${label} exited at start-up:\n${await child.finalOutput()}`);
    const pid = child.child.pid ?? 0;
    if ((await canConnect(port)) && (workers <= 1 || childrenOf(pid).length >= workers)) return;
    if (Date.now() > deadline)
      throw new Error(`${label} not serving after ${START_TIMEOUT_MS} ms:\n${child.output()}`);
    await sleep(100);
  }
}

async function start(label: string, args: string[], env: NodeJS.ProcessEnv, port: number, workers: number) {
  const child = spawnManaged(NODE, ['--disable-warning=ExperimentalWarning', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
  });
  try {
    await ready(child, port, workers, label);
    // Every worker listens on its own schedule; a moment for the last one.
    if (workers > 1) await sleep(500);
  } catch (err) {
    await child.stop('SIGKILL');
    throw err;
  }
  const pid = child.child.pid ?? 0;
  const server: Server = {
    label,
    url: `http://127.0.0.1:${port}`,
    pid,
    servingPids: () => (workers > 1 ? childrenOf(pid) : [pid]),
    output: () => child.output(),
    running: () => child.running(),
    stop: () => child.stop('SIGTERM', 15_000),
  };
  return server;
}

/** clubhouse on the SQLite file `database`, with `workers` processes (1: no cluster). */
export async function startClubhouse(
  label: string,
  database: string,
  dovecot: Dovecot,
  workers: number,
  /** Settings that replace the IMAP ones (the LDAP case: AUTH_BACKENDS=ldap and its LDAP_*). */
  backendEnv: Record<string, string> = {},
): Promise<Server> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    DATABASE_URL: `sqlite:${database}`,
    HOST: '127.0.0.1',
    PORT: String(port),
    IMAP_HOST: 'localhost',
    IMAP_PORT: String(dovecot.tlsPort),
    IMAP_SECURITY: 'tls',
    IMAP_CA_FILE: dovecot.caFile,
    LOG_LEVEL: 'warn',
    WORKERS: String(workers),
    ...backendEnv,
  };
  return start(label, ['src/main.ts'], env, port, workers);
}

/** The bare node:http ceiling, with `workers` node:cluster workers when > 1. */
export async function startBaseline(label: string, workers: number): Promise<Server> {
  const port = await freePort();
  return start(label, ['bench/baseline.ts', String(port)], { WORKERS: String(workers) }, port, workers);
}
