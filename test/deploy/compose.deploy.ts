// deploy/compose.yaml with deploy/compose.demo.yaml, proven with Debian 12's docker-compose on
// rootful podman (docs/deploy.md: Compose), through podman's Docker API: the stack
// comes up in its health-gated order (clubhouse only once PostgreSQL, Redis and the mail server are
// healthy; the demo data once clubhouse is); a session made on one of clubhouse's two workers is
// recognised by the other; with Redis stopped the service answers 503 with Retry-After, and once
// Redis is started again it serves the same session. (Debian 12's podman-compose, 1.0.3, is not
// proven: on the same files its clubhouse container restarted without end; docs/deploy.md.)
// Run by `npm run test:deploy` (docs/testing.md).
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { ensureDebianPackage } from '../helpers/apt.ts';
import { freePort } from '../helpers/ports.ts';
import { buildClubhouseImage } from './build.ts';
import { type Answer, http, login, waitFor } from './http.ts';
import { type Podman, startPodman } from './podman.ts';
import { DEBIAN_IMAGE, demoMailImage, postgresImage, redisImage } from './stand-ins.ts';

const run = promisify(execFile);
const REPO = path.resolve(import.meta.dirname, '../..');
const COMPOSE_FILES = [
  '-f',
  path.join(REPO, 'deploy/compose.yaml'),
  '-f',
  path.join(REPO, 'deploy/compose.demo.yaml'),
];
const PROJECT = `clubhouse-deploy-test-${process.pid}`;

/**
 * The health checks of the compose files with room for a shared, loaded machine: a check that
 * takes longer than its 5 s there (podman exec, niced, at a load average of 20) fails, and
 * docker-compose gives up on a dependency that fails `retries` times in a row ("is unhealthy").
 * Only the time each check may take and the failures tolerated change; what is checked, how often,
 * and the start order it gates are the files' own.
 */
const LOADED_MACHINE_HEALTH = `services:
${['clubhouse', 'postgres', 'redis', 'mail']
  .map((service) => `  ${service}:\n    healthcheck:\n      timeout: 60s\n      retries: 30\n`)
  .join('')}`;

/** Runs a compose tool on the compose files; rejects with its output on failure. */
async function runCompose(
  tool: 'docker-compose',
  project: string,
  env: NodeJS.ProcessEnv,
  files: readonly string[],
  args: string[],
): Promise<string> {
  try {
    const { stdout, stderr } = await run(tool, ['--project-name', project, ...files, ...args], {
      env,
      timeout: 600_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout + stderr;
  } catch (err) {
    const failure = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${tool} ${args.join(' ')}: ${failure.message}\n${failure.stdout}\n${failure.stderr}`);
  }
}

interface Inspected {
  Id: string;
  Name: string;
  State: {
    Status: string;
    ExitCode: number;
    StartedAt: string;
    Health?: { Status: string; Log?: { Start: string; ExitCode: number }[] };
  };
}

describe('the compose stack (compose.yaml + compose.demo.yaml)', { concurrency: false }, () => {
  let podman: Podman;
  let service: ChildProcess | undefined;
  let pump: NodeJS.Timeout | undefined;
  let port: number;
  let composeEnv: NodeJS.ProcessEnv;
  /** When each container (by id) first passed its health check, as the test's timer ran it. */
  const firstHealthy = new Map<string, number>();

  let composeFiles: string[];
  const compose = (args: string[]) => runCompose('docker-compose', PROJECT, composeEnv, composeFiles, args);
  const inspect = async (service: string): Promise<Inspected> => {
    const id = (await compose(['ps', '--all', '-q', service])).trim().split('\n').at(-1)!;
    return (JSON.parse(await podman.podman(['inspect', id])) as [Inspected])[0];
  };

  before(async () => {
    await ensureDebianPackage('/usr/bin/docker-compose', 'docker-compose');
    podman = await startPodman();
    const [clubhouse, postgres, redis, mail] = await Promise.all([
      buildClubhouseImage(podman),
      postgresImage(podman),
      redisImage(podman),
      demoMailImage(podman, 'localhost/clubhouse-test/demo-mail:latest'),
    ]);
    // docker-compose speaks the Docker API: podman serves it on a socket of this run's own.
    const socket = path.join(podman.dir, 'podman.sock');
    service = spawn('podman', ['system', 'service', '--time=0', `unix://${socket}`], {
      env: podman.env,
      stdio: 'ignore',
    });
    for (let waited = 0; ; waited += 100) {
      try {
        await run('podman', ['--remote', '--url', `unix://${socket}`, 'version'], { env: podman.env });
        break;
      } catch (err) {
        if (waited > 30_000) throw err;
        await sleep(100);
      }
    }
    // podman runs health checks from systemd timers (one run per interval since the container
    // started); this machine has no systemd, so the test is the timer, on each container's own
    // interval.
    const intervals = new Map<string, number>();
    const lastRun = new Map<string, number>();
    const due = async (id: string, startedAt: number): Promise<boolean> => {
      if (!intervals.has(id)) {
        const [state] = JSON.parse(await podman.podman(['inspect', id])) as [
          { Config: { Healthcheck?: { Interval: number } } },
        ];
        intervals.set(id, (state.Config.Healthcheck?.Interval ?? 0) / 1e6);
      }
      const interval = intervals.get(id)!;
      const since = Math.max(lastRun.get(id) ?? 0, startedAt);
      return interval > 0 && Date.now() - since >= interval;
    };
    // One listing at a time (on a loaded machine a `podman ps` can take longer than the half
    // second, and listings piling up would load it more), and each container's check on its own,
    // one at a time, so that a slow check delays no other container's.
    let listing = false;
    const checking = new Set<string>();
    pump = setInterval(() => {
      if (listing) return;
      listing = true;
      void podman
        .tryPodman([
          'ps',
          '--no-trunc',
          '--filter',
          `label=com.docker.compose.project=${PROJECT}`,
          '--format',
          '{{.ID}} {{.StartedAt}}',
        ])
        .then(async ({ stdout }) => {
          for (const line of stdout.split('\n').filter(Boolean)) {
            const [id, started] = line.split(' ') as [string, string];
            if (checking.has(id) || !(await due(id, Number(started) * 1000))) continue;
            checking.add(id);
            lastRun.set(id, Date.now());
            void podman
              .tryPodman(['healthcheck', 'run', id])
              .then((check) => {
                if (check.code === 0 && !firstHealthy.has(id)) firstHealthy.set(id, Date.now());
              })
              .finally(() => checking.delete(id));
          }
        })
        // A container gone between the listing and its inspection, or podman failing under load:
        // the next listing tries again (an error here must not end the test process).
        .catch(() => undefined)
        .finally(() => {
          listing = false;
        });
    }, 500);
    port = await freePort();
    const health = path.join(podman.dir, 'compose.loaded-machine.yaml');
    writeFileSync(health, LOADED_MACHINE_HEALTH);
    composeFiles = [...COMPOSE_FILES, '-f', health];
    composeEnv = {
      ...podman.env,
      DOCKER_HOST: `unix://${socket}`,
      COMPOSE_HTTP_TIMEOUT: '600',
      CLUBHOUSE_IMAGE: clubhouse,
      CLUBHOUSE_POSTGRES_IMAGE: postgres,
      CLUBHOUSE_REDIS_IMAGE: redis,
      CLUBHOUSE_DEMO_MAIL_IMAGE: mail,
      CLUBHOUSE_DEBIAN_IMAGE: DEBIAN_IMAGE,
      CLUBHOUSE_PORT: String(port),
      // Each request's line names the worker (pid) that answered it.
      ACCESS_LOG: 'true',
    };
  });

  after(async () => {
    clearInterval(pump);
    if (composeEnv) await compose(['down', '--volumes', '--timeout', '5']).catch(() => undefined);
    service?.kill('SIGTERM');
    await podman?.cleanup();
  });

  test('compose.yaml alone reads its secrets from CLUBHOUSE_SECRETS, each a compose secret the service reads by *_FILE', async () => {
    const secrets = path.join(podman.dir, 'secrets');
    mkdirSync(secrets, { mode: 0o700 });
    const password = randomBytes(18).toString('hex');
    for (const [name, value] of Object.entries({
      postgres_password: password,
      database_url: `postgres://clubhouse:${password}@postgres:5432/clubhouse`,
      redis_acl: `user default on >${password} ~* &* +@all`,
      session_store: `redis://:${password}@redis:6379/0`,
      secret_key: randomBytes(36).toString('base64url'),
    })) {
      writeFileSync(path.join(secrets, name), `${value}\n`, { mode: 0o644 });
    }
    const { stdout } = await run(
      'docker-compose',
      ['--project-name', PROJECT, '-f', path.join(REPO, 'deploy/compose.yaml'), 'config'],
      { env: { ...composeEnv, CLUBHOUSE_SECRETS: secrets } },
    );
    for (const name of ['database_url', 'session_store', 'secret_key', 'postgres_password', 'redis_acl']) {
      assert.match(stdout, new RegExp(`file: ${path.join(secrets, name)}$`, 'm'));
    }
    // No secret's value is in the settings the containers get.
    assert.ok(!stdout.includes(password));
    assert.match(stdout, /DATABASE_URL_FILE: \/run\/secrets\/database_url/);
    assert.match(stdout, /SESSION_STORE_FILE: \/run\/secrets\/session_store/);
    assert.match(stdout, /SECRET_KEY_FILE: \/run\/secrets\/secret_key/);
    assert.match(stdout, /POSTGRES_PASSWORD_FILE: \/run\/secrets\/postgres_password/);
  });

  test('comes up in its health-gated order and serves the demo', async (t) => {
    const started = performance.now();
    await compose(['up', '--detach', '--no-build']).catch(async (err: unknown) => {
      // "Container … is unhealthy": which one, and what its checks said.
      const health = await podman.tryPodman([
        'ps',
        '--all',
        '--filter',
        `label=com.docker.compose.project=${PROJECT}`,
        '--format',
        '{{.ID}} {{.Names}} {{.Status}}',
      ]);
      const logs = await Promise.all(
        health.stdout
          .split('\n')
          .filter(Boolean)
          .map(async (line) => {
            const inspected = await podman.tryPodman([
              'inspect',
              '--format',
              '{{json .State.Health}}',
              line.split(' ')[0]!,
            ]);
            return `${line}\n  ${inspected.stdout.trim().slice(-1500)}`;
          }),
      );
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${logs.join('\n')}`);
    });
    await waitFor(port, '/readyz');
    t.diagnostic(`up to /readyz 200: ${Math.round(performance.now() - started)} ms`);
    const clubhouse = await inspect('clubhouse');
    const clubhouseStarted = Date.parse(clubhouse.State.StartedAt);
    for (const dependency of ['postgres', 'redis', 'mail']) {
      const healthy = firstHealthy.get((await inspect(dependency)).Id);
      assert.ok(healthy !== undefined, `${dependency} never passed its health check`);
      assert.ok(
        healthy <= clubhouseStarted,
        `clubhouse started at ${clubhouse.State.StartedAt}, before ${dependency} was healthy (${new Date(healthy).toISOString()})`,
      );
    }
    const importerStarted = Date.parse((await inspect('demo-data')).State.StartedAt);
    const clubhouseHealthy = firstHealthy.get(clubhouse.Id);
    assert.ok(clubhouseHealthy !== undefined && clubhouseHealthy <= importerStarted);
    // The demo data is imported once clubhouse is healthy, and the importer exits 0.
    for (let waited = 0; ; waited += 500) {
      const importer = (await inspect('demo-data')).State;
      if (importer.Status === 'exited') {
        assert.equal(importer.ExitCode, 0, await compose(['logs', 'demo-data']));
        break;
      }
      assert.ok(waited < 180_000, `demo-data still ${importer.Status}`);
      await sleep(500);
    }
    const cookie = await login(port, 'alice', 'alice-password');
    const groups = await http(port, 'GET', '/api/group/', { cookie });
    assert.equal(groups.status, 200);
    assert.ok((JSON.parse(groups.body) as unknown[]).length > 0, groups.body);
  });

  test('a login on one worker is recognised on the other', async () => {
    const cookie = await login(port, 'bob', 'bob-password');
    // Fresh connections, spread by the primary over both workers.
    for (let i = 0; i < 20; i++) {
      const answer = await http(port, 'GET', `/api/auth/check?probe=${i}`, { cookie });
      assert.equal(answer.status, 200);
      assert.equal(answer.body, '"bob"');
    }
    const lines = (await compose(['logs', '--no-color', 'clubhouse']))
      .split('\n')
      .map((line) => line.slice(line.indexOf('{')))
      .filter((line) => line.startsWith('{'))
      .map(
        (line) => JSON.parse(line) as { msg?: string; pid?: number; url?: string; req?: { url?: string } },
      );
    // The access log's lines since bob's login (query strings are redacted there): the login's worker,
    // and the workers that answered the checks.
    const completed = lines.filter((line) => line.msg === 'request completed');
    const loginAt = completed.findLastIndex((line) => line.req?.url === '/api/auth/login');
    assert.ok(loginAt >= 0);
    const loginPid = completed[loginAt]!.pid;
    const checkPids = new Set(
      completed
        .slice(loginAt + 1)
        .filter((line) => line.req?.url?.startsWith('/api/auth/check'))
        .map((line) => line.pid),
    );
    assert.ok(checkPids.size >= 2, `every check was answered by one worker: ${[...checkPids].join(', ')}`);
    assert.ok([...checkPids].some((pid) => pid !== loginPid));
  });

  test('Redis stopped: 503 with Retry-After; started again: the same session is served', async (t) => {
    const cookie = await login(port, 'carol', 'carol-password');
    let mark = performance.now();
    await compose(['stop', '--timeout', '10', 'redis']);
    t.diagnostic(`redis stopped in ${Math.round(performance.now() - mark)} ms`);
    mark = performance.now();
    let answer: Answer | undefined;
    for (let tries = 0; tries < 120; tries++) {
      answer = await http(port, 'GET', '/api/auth/check', { cookie });
      if (answer.status === 503) break;
      await sleep(250);
    }
    assert.equal(answer?.status, 503, answer?.body);
    t.diagnostic(`first 503 after ${Math.round(performance.now() - mark)} ms`);
    assert.match(String(answer?.headers['retry-after']), /^\d+$/);
    assert.equal((await http(port, 'GET', '/readyz')).status, 503);
    mark = performance.now();
    await compose(['start', 'redis']);
    for (let tries = 0; ; tries++) {
      answer = await http(port, 'GET', '/api/auth/check', { cookie });
      if (answer.status === 200) break;
      assert.ok(tries < 240, `${answer.status} ${answer.body}`);
      await sleep(250);
    }
    assert.equal(answer.body, '"carol"');
    t.diagnostic(`served again ${Math.round(performance.now() - mark)} ms after redis was started`);
    await waitFor(port, '/readyz');
  });
});
