// Two instances of the service on one store, as several machines behind a balancer run it, for the
// suites that prove what one instance changes the other answers at once (test/caches/*-cross-instance,
// store-caches-property): each instance a TestApp listening on a loopback port, so that a test can ask
// the raw read path over a real socket (ask) as well as the Fastify route (inject); and the clubhouse
// command as a process of its own on the same stores.
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { startTestApp, type TestApp, type TestAppOptions } from './app.ts';
import type { TestStore } from './stores.ts';

const BIN = fileURLToPath(new URL('../../bin/clubhouse.js', import.meta.url));

export interface Instance {
  readonly app: TestApp;
  /** The loopback port it listens on. */
  readonly port: number;
}

/** The options of each instance but its stores, which the two share. */
type InstanceOptions = Omit<TestAppOptions, 'store' | 'data' | 'env'>;

/**
 * Two instances on a fresh database of `store`'s kind: the first makes it, the second opens the same
 * stores (its settings); each listening. `second` adds to the second's options (a fixed clock, say).
 */
export async function startTwoInstances(
  store: TestStore,
  options: InstanceOptions,
  second: InstanceOptions = {},
): Promise<[Instance, Instance]> {
  const first = await startTestApp({ ...options, store });
  const other = await startTestApp({ ...options, ...second, env: first.storeEnv });
  return [await listening(first), await listening(other)];
}

async function listening(app: TestApp): Promise<Instance> {
  return { app, port: Number(new URL(await app.fastify.listen({ port: 0, host: '127.0.0.1' })).port) };
}

/** A GET over a real socket: the raw read path unless the URL has a query string. */
export function ask(port: number, path: string, cookie: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { cookie }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** `clubhouse ARGS` as a process of its own on `env`'s stores: its exit code and what it wrote. */
export function clubhouseRun(
  args: string[],
  env: Readonly<Record<string, string>>,
): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: tmpdir(),
      env: { PATH: process.env['PATH'] ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, output }));
  });
}

/** clubhouseRun that fails the test unless the command exits 0. */
export async function clubhouseProcess(args: string[], env: Readonly<Record<string, string>>): Promise<void> {
  const { code, output } = await clubhouseRun(args, env);
  if (code !== 0) throw new Error(`clubhouse ${args.join(' ')}: ${code}\n${output}`);
}
