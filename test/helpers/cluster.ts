// Runs clubhouse as a real node:cluster (`WORKERS=N node src/main.ts`) for tests: resolves once all N
// workers serve, keeps every log line it prints, and sends requests on fresh connections so the
// cluster's round robin sees each one.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { type ManagedChild, spawnManaged } from './child.ts';
import { freePort } from './ports.ts';

const START_DEADLINE_MS = 60_000;

export interface TestCluster {
  readonly port: number;
  /** Pids of the workers serving once it started. */
  readonly workers: readonly number[];
  /** The primary's process (signals, exit code). */
  readonly server: ManagedChild;
  /** Every JSON log line the primary and its workers printed so far, parsed. */
  readonly lines: readonly Record<string, unknown>[];
  /** Pids that said they serve, in order: replacements of killed workers too. */
  servingPids(): number[];
  output(): string;
  /** SIGTERM, then SIGKILL after a grace; removes the working directory. */
  stop(): Promise<void>;
}

/** Starts `WORKERS=workers` with these settings (PORT, HOST and WORKERS are set here). */
export async function startCluster(env: Record<string, string>, workers = 2): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'clubhouse-cluster-'));
  const port = await freePort();
  const server = spawnManaged(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', fileURLToPath(new URL('../../src/main.ts', import.meta.url))],
    {
      // Its own working directory: no .env of the checkout is read.
      cwd: dir,
      env: {
        PATH: process.env['PATH'],
        HOST: '127.0.0.1',
        PORT: String(port),
        WORKERS: String(workers),
        LOG_LEVEL: 'info',
        // Every request's line (off by default): tests see which worker answered.
        ACCESS_LOG: 'true',
        SHUTDOWN_GRACE_MS: '2000',
        ...env,
      },
    },
  );
  // Every log line (the harness keeps only the tail of the output), parsed.
  const lines: Record<string, unknown>[] = [];
  let partial = '';
  server.child.stdout?.on('data', (chunk: Buffer) => {
    const text = partial + chunk.toString('utf8');
    const complete = text.split('\n');
    partial = complete.pop() ?? '';
    for (const line of complete) if (line.startsWith('{')) lines.push(JSON.parse(line));
  });
  const servingPids = () =>
    lines.filter((line) => line['msg'] === 'clubhouse is serving').map((line) => Number(line['pid']));
  const stop = async () => {
    await server.stop('SIGTERM', 5000);
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + START_DEADLINE_MS;
  while (servingPids().length < workers) {
    if (!server.running() || Date.now() > deadline) {
      const output = server.running() ? server.output() : await server.finalOutput();
      await stop();
      throw new Error(`the cluster did not start ${workers} workers:\n${output}`);
    }
    await sleep(50);
  }
  return { port, workers: servingPids(), server, lines, servingPids, output: () => server.output(), stop };
}

export interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/** One request on a fresh connection (`Connection: close`), so the round robin sees every one. */
export function request(
  port: number,
  method: string,
  path: string,
  options: { cookie?: string; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { connection: 'close' };
    if (options.cookie !== undefined) headers['cookie'] = options.cookie;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      response.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** POST /api/auth/login on a fresh connection. */
export function postLogin(port: number, username: string, password: string): Promise<Answer> {
  return request(port, 'POST', '/api/auth/login', { body: JSON.stringify({ username, password }) });
}
