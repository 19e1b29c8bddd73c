// Sustained mixed load (docs/reliability.md): 80% check, 15% group reads, 5% login+logout at a steady rate,
// from this process against clubhouse running as its own process with a real Dovecot. Measures
// errors, latency per window, the server's RSS and open file descriptors, and whether the session
// table holds exactly the logins that were not logged out. `npm run soak` runs 10 minutes and
// writes bench/results/soak.md; test/ops/soak.test.ts runs 20 seconds with the same checks.
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { loadConfig } from '../src/config/config.ts';
import { applyImport } from '../src/groups/import.ts';
import { openStores } from '../src/store/open.ts';
import { type Dovecot, startDovecot, testUser } from '../test/helpers/dovecot.ts';
import { startService } from '../test/helpers/service.ts';

export interface SoakOptions {
  readonly seconds: number;
  /** Requests per second, spread evenly. */
  readonly rate: number;
  /** Length of one measuring window. */
  readonly windowSeconds: number;
  /** Load before measuring starts (not in the windows; errors still count). */
  readonly warmupSeconds: number;
}

export interface SoakWindow {
  readonly second: number;
  readonly requests: number;
  readonly errors: number;
  readonly p50: number;
  readonly p99: number;
  readonly rssMiB: number;
  readonly fds: number;
}

export interface SoakResult {
  readonly requests: number;
  readonly errors: number;
  readonly errorSamples: string[];
  readonly logins: number;
  readonly logouts: number;
  readonly windows: SoakWindow[];
  readonly sessionsExpected: number;
  readonly sessionsInTable: number;
  readonly fdsBefore: number;
  readonly fdsAfter: number;
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const LOAD_USERS = 50;

function procStatus(pid: number): { rssMiB: number; fds: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
    return { rssMiB: Math.round(rss * 10) / 10, fds: readdirSync(`/proc/${pid}/fd`).length };
  } catch {
    return { rssMiB: 0, fds: 0 };
  }
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function startSoakService(
  dovecot: Dovecot,
  dir: string,
): Promise<{ child: ChildProcess; url: string; database: string }> {
  const database = join(dir, 'soak.db');
  const env = {
    DATABASE_URL: `sqlite:${database}`,
    IMAP_HOST: 'localhost',
    IMAP_PORT: String(dovecot.tlsPort),
    IMAP_SECURITY: 'tls',
    IMAP_CA_FILE: dovecot.caFile,
    LOG_LEVEL: 'warn',
    // Every load request comes from 127.0.0.1: the per-IP throttle must not count the load's logins.
    THROTTLE_IP_FAILURES: '1000000',
  };
  const stores = await openStores(loadConfig(env).store);
  const memberships = Array.from({ length: LOAD_USERS }, (_, i) =>
    [1, 2, 3].map((group) => ({ group, username: `user${String(i).padStart(3, '0')}`, status: 1 })),
  ).flat();
  const groups = [1, 2, 3].map((id) => ({
    id,
    name: `Soak group ${id}`,
    description: 'd',
    short_description: 's',
    activities: 'a',
    type: 0,
  }));
  const imported = await applyImport(stores, { groups, users: [], memberships }, 'lower');
  await stores.close();
  if (!imported.ok) throw new Error(`soak data did not import: ${JSON.stringify(imported.problems)}`);
  // Request logging stays on (LOG_LEVEL=info): the soak measures the service as it runs.
  const { child, url } = await startService(env);
  return { child, url, database };
}

/** Runs the soak and returns what it saw; everything it started is stopped. */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const dir = await mkdtemp(join(tmpdir(), 'clubhouse-soak-'));
  const dovecot = await startDovecot();
  const { child, url, database } = await startSoakService(dovecot, dir);
  const pid = child.pid ?? 0;
  const agent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
  const errorSamples: string[] = [];
  let errors = 0;
  let requests = 0;
  let logins = 0;
  let logouts = 0;
  const call = async (
    method: 'GET' | 'POST',
    path: string,
    expect: number,
    cookie?: string,
    body?: string,
  ) => {
    const headers: Record<string, string> = {};
    if (cookie !== undefined) headers['cookie'] = cookie;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await request(`${url}${path}`, { method, headers, body, dispatcher: agent });
    const text = await response.body.text();
    requests++;
    if (response.statusCode !== expect) {
      errors++;
      if (errorSamples.length < 10)
        errorSamples.push(`${method} ${path} → ${response.statusCode} ${text.slice(0, 120)}`);
    }
    return { status: response.statusCode, headers: response.headers, text };
  };
  const login = async (username: string) => {
    const { password } = testUser(username);
    const answer = await call(
      'POST',
      '/api/auth/login',
      200,
      undefined,
      JSON.stringify({ username, password }),
    );
    logins += answer.status === 200 ? 1 : 0;
    const setCookie = answer.headers['set-cookie'];
    const lines = Array.isArray(setCookie) ? setCookie : [setCookie ?? ''];
    const session = lines
      .map((line) => /^sessionid=([a-z0-9]{32})/.exec(line)?.[1])
      .find((id) => id !== undefined);
    return session === undefined ? null : `sessionid=${session}`;
  };

  try {
    const pool: string[] = [];
    for (let i = 0; i < LOAD_USERS; i++) {
      const cookie = await login(`user${String(i).padStart(3, '0')}`);
      if (cookie !== null) pool.push(cookie);
    }
    const fdsBefore = procStatus(pid).fds;
    const windows: SoakWindow[] = [];
    let latencies: number[] = [];
    let windowErrors = 0;
    let windowRequests = 0;
    let random = 0x2f6b1a3d;
    const next = () => {
      // xorshift32: a seeded, reproducible mix.
      random ^= random << 13;
      random ^= random >>> 17;
      random ^= random << 5;
      return (random >>> 0) / 0x1_0000_0000;
    };
    const one = async () => {
      const started = performance.now();
      const errorsBefore = errors;
      const roll = next();
      const index = Math.floor(next() * pool.length);
      const cookie = pool[index] ?? '';
      if (roll < 0.8) {
        await call('GET', '/api/auth/check', 200, cookie);
      } else if (roll < 0.95) {
        await call(
          'GET',
          roll < 0.875 ? '/api/group/' : `/api/group/${1 + Math.floor(next() * 3)}`,
          200,
          cookie,
        );
      } else {
        // A login and its logout; the pool's sessions stay untouched, so no check races a logout.
        const fresh = await login(`user${String(index).padStart(3, '0')}`);
        if (fresh !== null) {
          const out = await call('POST', '/api/auth/logout', 200, fresh);
          if (out.status === 200) logouts++;
        }
      }
      latencies.push(performance.now() - started);
      windowRequests++;
      windowErrors += errors - errorsBefore;
    };
    const inFlight = new Set<Promise<void>>();
    const started = Date.now();
    const interval = 1000 / options.rate;
    let sent = 0;
    // The warm-up runs the same load (its errors count) but is not measured: the first window would
    // otherwise compare JIT-cold latencies with warm ones.
    const measureFrom = started + options.warmupSeconds * 1000;
    let warming = options.warmupSeconds > 0;
    let windowStart = Date.now();
    while (Date.now() - started < (options.warmupSeconds + options.seconds) * 1000) {
      if (warming && Date.now() >= measureFrom) {
        warming = false;
        latencies = [];
        windowErrors = 0;
        windowRequests = 0;
        windowStart = Date.now();
      }
      const due = started + sent * interval;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      sent++;
      const p = one().catch((err: unknown) => {
        errors++;
        if (errorSamples.length < 10) errorSamples.push(String(err));
      });
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
      if (!warming && Date.now() - windowStart >= options.windowSeconds * 1000) {
        const sorted = latencies.sort((a, b) => a - b);
        windows.push({
          second: Math.round((Date.now() - measureFrom) / 1000),
          requests: windowRequests,
          errors: windowErrors,
          p50: Math.round(percentile(sorted, 50) * 100) / 100,
          p99: Math.round(percentile(sorted, 99) * 100) / 100,
          ...procStatus(pid),
        });
        latencies = [];
        windowErrors = 0;
        windowRequests = 0;
        windowStart = Date.now();
      }
    }
    await Promise.all(inFlight);
    await agent.close();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const fdsAfter = procStatus(pid).fds;
    const db = new DatabaseSync(database, { readOnly: true });
    const sessionsInTable = Number(
      db.prepare('SELECT count(*) AS n FROM sessions WHERE expires_at > ?').get(Date.now())?.['n'],
    );
    db.close();
    return {
      requests,
      errors,
      errorSamples,
      logins,
      logouts,
      windows,
      sessionsExpected: logins - logouts,
      sessionsInTable,
      fdsBefore,
      fdsAfter,
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    await dovecot.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Least-squares slope of RSS over time, in MiB per minute. */
export function rssSlopeMiBPerMinute(windows: readonly SoakWindow[]): number {
  const n = windows.length;
  if (n < 2) return 0;
  const xs = windows.map((w) => w.second / 60);
  const ys = windows.map((w) => w.rssMiB);
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  const num = xs.reduce((sum, x, i) => sum + (x - mx) * ((ys[i] ?? 0) - my), 0);
  const den = xs.reduce((sum, x) => sum + (x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

if (import.meta.main) {
  const seconds = Number(process.env['SOAK_SECONDS'] ?? 600);
  const rate = Number(process.env['SOAK_RATE'] ?? 400);
  const warmup = Number(process.env['SOAK_WARMUP_SECONDS'] ?? 30);
  const result = await runSoak({
    seconds,
    rate,
    windowSeconds: seconds >= 120 ? 60 : 5,
    warmupSeconds: warmup,
  });
  const first = result.windows[0];
  const last = result.windows.at(-1);
  const p99Change =
    first !== undefined && last !== undefined && first.p99 > 0 ? (last.p99 - first.p99) / first.p99 : 0;
  const slope = rssSlopeMiBPerMinute(result.windows.slice(1));
  const lines = [
    `# Soak: ${seconds} s at ${rate} req/s (80% check, 15% group reads, 5% login+logout), after ${warmup} s of warm-up`,
    '',
    `Date ${new Date().toISOString()}; Node ${process.version}.`,
    '',
    `| requests | errors | logins | logouts | sessions expected | sessions in table | fds before | fds after | p99 first→last | RSS slope |`,
    '|---|---|---|---|---|---|---|---|---|---|',
    `| ${result.requests} | ${result.errors} | ${result.logins} | ${result.logouts} | ${result.sessionsExpected} | ${result.sessionsInTable} | ${result.fdsBefore} | ${result.fdsAfter} | ${first?.p99 ?? 0} → ${last?.p99 ?? 0} ms (${(p99Change * 100).toFixed(1)}%) | ${slope.toFixed(2)} MiB/min |`,
    '',
    '| second | requests | errors | p50 ms | p99 ms | RSS MiB | fds |',
    '|---|---|---|---|---|---|---|',
    ...result.windows.map(
      (w) => `| ${w.second} | ${w.requests} | ${w.errors} | ${w.p50} | ${w.p99} | ${w.rssMiB} | ${w.fds} |`,
    ),
    '',
    ...(result.errorSamples.length > 0 ? ['Errors:', ...result.errorSamples.map((e) => `- ${e}`)] : []),
  ];
  const text = lines.join('\n');
  await mkdir(join(ROOT, 'bench/results'), { recursive: true });
  await writeFile(join(ROOT, 'bench/results/soak.md'), `${text}\n`);
  process.stdout.write(`${text}\n`);
  const ok =
    result.errors === 0 &&
    result.sessionsExpected === result.sessionsInTable &&
    Math.abs(p99Change) <= 0.2 &&
    slope < 1;
  process.exitCode = ok ? 0 : 1;
}
