// BENCH_TARGET=container: clubhouse under load as the image runs it (docs/deploy.md: The image),
// instead of `npm start`'s command line on the checkout. The image is built from this checkout's
// Containerfile by the deploy test's machinery (test/deploy/: a private rootful podman, stand-ins
// of the base images), once per bench run, and each clubhouse the bench starts is a container of
// it on the host's network (no port mapping in the way: the same loopback as every other server
// here) with a read-only root filesystem. The bench's directory is mounted at the same path, so
// that its seeded databases and the harness Dovecot's CA are where the settings say; the
// container runs as root there, as the seeded files are root's (the user changes no figure).
// Its node process (and its workers) are host processes: the bench samples their CPU and memory
// as it does for `npm start`'s.
import { readFileSync, statSync, truncateSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildClubhouseImage } from '../../test/deploy/build.ts';
import { type Podman, startPodman, TEST_LABEL } from '../../test/deploy/podman.ts';
import { canConnect } from '../../test/helpers/ports.ts';
import { childrenOf } from './procs.ts';
import type { Server } from './servers.ts';

export const TARGET = process.env['BENCH_TARGET'] === 'container' ? 'container' : 'process';
if (!['', 'container', 'process'].includes(process.env['BENCH_TARGET'] ?? '')) {
  throw new Error(`BENCH_TARGET: process (the default) or container, got ${process.env['BENCH_TARGET']}`);
}

const START_TIMEOUT_MS = 60_000;

let podman: Promise<{ podman: Podman; image: string }> | undefined;

function image(): Promise<{ podman: Podman; image: string }> {
  podman ??= (async () => {
    const private_ = await startPodman();
    return { podman: private_, image: await buildClubhouseImage(private_) };
  })();
  return podman;
}

/** Removes every container and the image (the private podman and all it holds). */
export async function stopContainers(): Promise<void> {
  if (podman === undefined) return;
  await (await podman).podman.cleanup();
}

/** clubhouse in a container of the image, with these settings, serving on the host's `port`. */
export async function startContainer(
  label: string,
  settings: Readonly<Record<string, string>>,
  port: number,
  workers: number,
  mounts: readonly string[],
): Promise<Server> {
  const { podman: p, image: tag } = await image();
  const name = `clubhouse-bench-${label.replace(/[^a-z0-9]+/gi, '-')}-${port}`;
  const env = Object.entries({ HOST: '127.0.0.1', ...settings }).flatMap(([key, value]) => [
    '--env',
    `${key}=${value}`,
  ]);
  const volumes = [...new Set(mounts)].flatMap((dir) => ['--volume', `${dir}:${dir}`]);
  await p.podman([
    'run',
    '--detach',
    '--name',
    name,
    '--label',
    TEST_LABEL,
    '--network',
    'host',
    '--read-only',
    '--user',
    '0:0',
    ...volumes,
    ...env,
    tag,
  ]);
  const [state] = JSON.parse(await p.podman(['inspect', name])) as [
    { State: { Pid: number }; HostConfig: { LogConfig: { Path: string } } },
  ];
  const pid = state.State.Pid;
  const logFile = state.HostConfig.LogConfig.Path;
  const output = async () => (await p.tryPodman(['logs', '--tail', '200', name])).stdout;
  let running = true;
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!((await canConnect(port)) && (workers <= 1 || childrenOf(pid).length >= workers))) {
    if (Date.now() > deadline) throw new Error(`${label} (container) not serving:\n${await output()}`);
    await sleep(100);
  }
  if (workers > 1) await sleep(500);
  return {
    label: `${label} (container)`,
    url: `http://127.0.0.1:${port}`,
    pid,
    settings,
    servingPids: () => (workers > 1 ? childrenOf(pid) : [pid]),
    // podman's log file: the service's lines, each behind podman's own prefix (time, stream).
    logBytes: () => statSync(logFile).size,
    resetLog: () => truncateSync(logFile, 0),
    log: () => readFileSync(logFile, 'utf8'),
    output: () => `(podman logs ${name})`,
    running: () => running,
    async stop() {
      running = false;
      await p.tryPodman(['stop', '--time', '15', name]);
      await p.tryPodman(['rm', '--force', name]);
    },
  };
}

/** The directories a clubhouse with these settings reads: the database's, and every *_FILE's. */
export function mountsFor(settings: Readonly<Record<string, string>>, dir: string): string[] {
  const mounts = [dir];
  for (const [key, value] of Object.entries(settings)) {
    if (key === 'DATABASE_URL' && value.startsWith('sqlite:')) mounts.push(path.dirname(value.slice(7)));
    if (key.endsWith('_FILE')) mounts.push(path.dirname(value));
  }
  return mounts;
}
