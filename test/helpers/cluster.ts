// Runs clubhouse as a real node:cluster (`WORKERS=N node src/main.ts`) for tests: resolves once all N
// workers serve, and sends requests on fresh connections so the cluster's round robin sees each one.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { spawnManaged } from './child.ts';
import { freePort } from './ports.ts';

const START_DEADLINE_MS = 60_000;

export interface TestCluster {
  readonly port: number;
  /** Pids of the workers serving now. */
  readonly workers: readonly number[];
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
        SHUTDOWN_GRACE_MS: '2000',
        ...env,
      },
    },
  );
  const serving = new Set<number>();
  let partial = '';
  server.child.stdout?.on('data', (chunk: Buffer) => {
    const text = partial + chunk.toString('utf8');
    const lines = text.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.includes('"msg":"clubhouse is serving"')) continue;
      serving.add(Number((JSON.parse(line) as { pid: number }).pid));
    }
  });
  const stop = async () => {
    await server.stop('SIGTERM', 5000);
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + START_DEADLINE_MS;
  while (serving.size < workers) {
    if (!server.running() || Date.now() > deadline) {
      const output = server.running() ? server.output() : await server.finalOutput();
      await stop();
      throw new Error(`the cluster did not start ${workers} workers:\n${output}`);
    }
    await sleep(50);
  }
  return { port, workers: [...serving], output: () => server.output(), stop };
}

export interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/** POST /api/auth/login on a fresh connection. */
export function postLogin(port: number, username: string, password: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/auth/login',
        headers: { connection: 'close', 'content-type': 'application/json' },
        agent: false,
      },
      (response) => {
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
      },
    );
    request.on('error', reject);
    request.end(JSON.stringify({ username, password }));
  });
}
