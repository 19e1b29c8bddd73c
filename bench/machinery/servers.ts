// The servers under load, each a child process on a free loopback port: clubhouse itself
// (src/main.ts, as `npm start` runs it, with its default settings) and the bare node:http baseline
// (baseline.ts), both on the same node binary. A server's stdout goes to a file, as it would to a
// log file or journald: the bench counts its bytes, and no pipe reader competes for the CPU.
import { readFileSync, statSync, truncateSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SETTINGS } from '../../src/config/settings.ts';
import type { ManagedChild } from '../../test/helpers/child.ts';
import { spawnManaged } from '../../test/helpers/child.ts';
import type { Dovecot } from '../../test/helpers/dovecot.ts';
import { npmStart } from '../../test/helpers/npm-start.ts';
import { canConnect, freePort } from '../../test/helpers/ports.ts';
import { mountsFor, startContainer, TARGET } from './container.ts';
import { childrenOf } from './procs.ts';

const ROOT = path.join(import.meta.dirname, '..', '..');
export const NODE = path.join(ROOT, 'node_modules', '.bin', 'node');
const START_TIMEOUT_MS = 30_000;
const TAIL_BYTES = 64 * 1024;

export interface Server {
  readonly label: string;
  readonly url: string;
  /** The process started (the cluster primary when workers > 1). */
  readonly pid: number;
  /** The settings this bench gave it (clubhouse); every other setting is at its default. */
  readonly settings: Readonly<Record<string, string>>;
  /** The processes that serve: the workers, or the process itself. */
  servingPids(): number[];
  /** Bytes written to stdout since the last resetLog(). */
  logBytes(): number;
  /** Empties the stdout file (call while the server is idle). */
  resetLog(): void;
  /** What it wrote to stdout since the last resetLog(). */
  log(): string;
  /** The tail of stdout and stderr, for error messages. */
  output(): string;
  running(): boolean;
  stop(): Promise<void>;
}

/** Resolves once the port accepts and `workers` children run (when > 1); rejects if the process exits. */
async function ready(
  child: ManagedChild,
  port: number,
  workers: number,
  tail: () => string,
  label: string,
  timeoutMs: number,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!child.running()) {
      await child.exited;
      throw new Error(`${label} exited at start-up:\n${tail()}`);
    }
    const pid = child.child.pid ?? 0;
    if ((await canConnect(port)) && (workers <= 1 || childrenOf(pid).length >= workers)) return;
    if (Date.now() > deadline) throw new Error(`${label} not serving after ${timeoutMs} ms:\n${tail()}`);
    await sleep(100);
  }
}

function tailOf(file: string): string {
  try {
    const text = readFileSync(file, 'utf8');
    return text.slice(-TAIL_BYTES);
  } catch {
    return '';
  }
}

/** The environment without any clubhouse setting: neither the caller's shell nor a `.env` leaks in. */
function cleanEnvironment(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(SETTINGS)) delete env[name];
  return env;
}

interface StartOptions {
  readonly label: string;
  readonly args: readonly string[];
  readonly settings: Record<string, string>;
  /** Variables beside the settings: npm start's own (startEnvironment). */
  readonly environment?: Record<string, string>;
  readonly port: number;
  readonly workers: number;
  /** Directory for the stdout/stderr files; also the cwd, so no `.env` of the checkout is read. */
  readonly dir: string;
  /** A command node runs under (valgrind for bench/profile.ts), which keeps the pid and serves slower. */
  readonly wrapper?: readonly string[];
}

/**
 * The node flags of `npm start`, so that the benchmark runs the service as users do (e.g. its
 * young-generation size) without going through npm.
 */
function startFlags(): string[] {
  return npmStart().flags.filter(
    (flag) => flag.startsWith('--') && flag !== '--disable-warning=ExperimentalWarning',
  );
}

async function start(options: StartOptions): Promise<Server> {
  const { label, port, workers, dir } = options;
  const stdout = path.join(dir, `${label.replace(/[^a-z0-9]+/gi, '-')}-${port}.out`);
  // `exec` keeps the pid: the shell only opens the files (stdout appended, so truncating works).
  const child = spawnManaged(
    '/bin/sh',
    [
      '-c',
      'exec "$@" >>"$0" 2>>"$0.err"',
      stdout,
      ...(options.wrapper ?? []),
      NODE,
      '--disable-warning=ExperimentalWarning',
      ...options.args,
    ],
    { cwd: dir, env: { ...cleanEnvironment(), ...options.environment, ...options.settings } },
  );
  const output = () => `${tailOf(stdout)}${tailOf(`${stdout}.err`)}`;
  // valgrind translates node's start-up too: it may take minutes on a crowded machine.
  const timeoutMs = options.wrapper === undefined ? START_TIMEOUT_MS : 10 * START_TIMEOUT_MS;
  try {
    await ready(child, port, workers, output, label, timeoutMs);
    // Every worker listens on its own schedule; a moment for the last one.
    if (workers > 1) await sleep(500);
  } catch (err) {
    await child.stop('SIGKILL');
    throw err;
  }
  const pid = child.child.pid ?? 0;
  return {
    label,
    url: `http://127.0.0.1:${port}`,
    pid,
    settings: options.settings,
    servingPids: () => (workers > 1 ? childrenOf(pid) : [pid]),
    logBytes: () => statSync(stdout).size,
    resetLog: () => truncateSync(stdout, 0),
    log: () => readFileSync(stdout, 'utf8'),
    output,
    running: () => child.running(),
    stop: () => child.stop('SIGTERM', 15_000),
  };
}

export interface ClubhouseOptions {
  readonly label: string;
  /** DATABASE_URL: `sqlite:PATH` or `postgres://…`. */
  readonly databaseUrl: string;
  readonly dovecot: Dovecot;
  readonly dir: string;
  /**
   * What the case is about (WORKERS, SESSION_STORE, AUTH_BACKENDS and its LDAP_*). With
   * AUTH_BACKENDS set, the IMAP settings are left out.
   */
  readonly settings?: Record<string, string>;
  /** More node flags after npm start's (e.g. --cpu-prof for bench/profile.ts). */
  readonly nodeArgs?: readonly string[];
  /** A command node runs under (StartOptions.wrapper). */
  readonly wrapper?: readonly string[];
}

/**
 * clubhouse with its defaults (LOG_LEVEL, WORKERS, HOST, timeouts…), except the database, the port,
 * the harness Dovecot (IMAP_HOST/PORT/CA_FILE) and what `settings` adds.
 */
export async function startClubhouse(options: ClubhouseOptions): Promise<Server> {
  const port = await freePort();
  const extra = options.settings ?? {};
  const imap: Record<string, string> =
    extra['AUTH_BACKENDS'] === undefined
      ? {
          IMAP_HOST: 'localhost',
          IMAP_PORT: String(options.dovecot.tlsPort),
          IMAP_CA_FILE: options.dovecot.caFile,
        }
      : {};
  const settings = { DATABASE_URL: options.databaseUrl, PORT: String(port), ...imap, ...extra };
  // BENCH_TARGET=container: the image instead (container.ts); a profile's node flags need the checkout.
  if (TARGET === 'container' && options.nodeArgs === undefined && options.wrapper === undefined) {
    return startContainer(
      options.label,
      settings,
      port,
      Number(extra['WORKERS'] ?? '1'),
      mountsFor(settings, options.dir),
    );
  }
  return start({
    label: options.label,
    args: [...startFlags(), ...(options.nodeArgs ?? []), path.join(ROOT, 'src', 'main.ts')],
    settings,
    // npm start's variables (e.g. MALLOC_ARENA_MAX): users' processes have them.
    environment: npmStart().environment,
    port,
    workers: Number(extra['WORKERS'] ?? '1'),
    dir: options.dir,
    ...(options.wrapper === undefined ? {} : { wrapper: options.wrapper }),
  });
}

/** The bare node:http ceiling serving `answers` (answers.ts), with `workers` node:cluster workers. */
export async function startBaseline(
  label: string,
  answers: string,
  workers: number,
  dir: string,
  options: {
    readonly nodeArgs?: readonly string[];
    readonly wrapper?: readonly string[];
    /** Each session's own answers (answers.ts, recordSessionAnswers): the per-session baseline. */
    readonly sessionAnswers?: string;
  } = {},
) {
  const port = await freePort();
  return start({
    label,
    args: [
      ...(options.nodeArgs ?? []),
      path.join(ROOT, 'bench', 'machinery', 'baseline.ts'),
      String(port),
      answers,
      String(workers),
      ...(options.sessionAnswers === undefined ? [] : [options.sessionAnswers]),
    ],
    settings: {},
    port,
    workers,
    dir,
    ...(options.wrapper === undefined ? {} : { wrapper: options.wrapper }),
  });
}
