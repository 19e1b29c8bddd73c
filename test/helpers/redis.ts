// Redis for tests: the machine's server on 127.0.0.1:6379 when it answers
// PING, else a private redis-server. Tests share a server but not keys:
// each keyPrefix() is unique, and stop() deletes the keys under them.
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { ensureDebianPackage } from './apt.ts';
import { type ManagedChild, removeNow, removeOnExit, spawnManaged } from './child.ts';
import { freePort } from './ports.ts';

const SHARED_PORT = 6379;
const REDIS_BIN = '/usr/bin/redis-server';
const START_ATTEMPTS = 3;
const START_TIMEOUT_MS = 15_000;

export interface TestRedis {
  /** redis://127.0.0.1:<port> */
  url: string;
  /** A fresh key prefix, unique per call, e.g. `test:1f2e3d4c5b6a:`. */
  keyPrefix(): string;
  /** Deletes keys under the prefixes handed out; stops the server only if it is private. */
  stop(): Promise<void>;
  /** True when this handle started its own server. */
  private: boolean;
  /** rediss://127.0.0.1:<tls port> when started with `tls`, else null. */
  tlsUrl: string | null;
  /** Private only: shuts the server down; connections are refused until startServer(). */
  stopServer?(): Promise<void>;
  /** Private only: starts the server again on the same port (empty: nothing is saved). */
  startServer?(): Promise<void>;
}

export interface RedisOptions {
  /** Start a private redis-server even if one answers on 6379 (for stop/start tests). */
  private?: boolean;
  /** Private, with a tls-port serving this certificate besides the plain port. */
  tls?: { certFile: string; keyFile: string; caFile: string };
  /** Private: the addresses to bind (default 127.0.0.1), e.g. a second one for name checks. */
  bind?: string;
  /** Private: more server arguments, e.g. ['--rename-command', 'CONFIG', ''] (a managed Redis's). */
  args?: readonly string[];
}

/** Returns the shared Redis on 6379 if it answers PING (unless `private`), else starts one. */
export async function startRedis(options: RedisOptions = {}): Promise<TestRedis> {
  const wantsPrivate =
    options.private || options.tls !== undefined || options.bind !== undefined || options.args !== undefined;
  if (!wantsPrivate && (await answersPing(SHARED_PORT))) return handle(SHARED_PORT, false);
  return startPrivateRedis(options);
}

function handle(port: number, isPrivate: boolean, server?: PrivateServer, tlsPort?: number): TestRedis {
  const prefixes: string[] = [];
  const result: TestRedis = {
    url: `redis://127.0.0.1:${port}`,
    private: isPrivate,
    tlsUrl: tlsPort === undefined ? null : `rediss://127.0.0.1:${tlsPort}`,
    keyPrefix() {
      const prefix = `test:${randomBytes(6).toString('hex')}:`;
      prefixes.push(prefix);
      return prefix;
    },
    async stop() {
      if (server) return server.destroy();
      await deleteKeys(port, prefixes);
    },
  };
  if (server) {
    result.stopServer = () => server.stopServer();
    result.startServer = () => server.startServer();
  }
  return result;
}

/** A client that fails fast instead of retrying: the harness wants a yes or no. */
export function probeClient(port: number): Redis {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    connectTimeout: 2000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  return client;
}

async function answersPing(port: number): Promise<boolean> {
  const client = probeClient(port);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

async function deleteKeys(port: number, prefixes: readonly string[]): Promise<void> {
  if (prefixes.length === 0) return;
  const client = probeClient(port);
  try {
    await client.connect();
    for (const prefix of prefixes) {
      // Prefixes are hex, so they contain no glob characters.
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        if (keys.length > 0) await client.unlink(...keys);
        cursor = next;
      } while (cursor !== '0');
    }
  } finally {
    client.disconnect();
  }
}

interface PrivateServer {
  stopServer(): Promise<void>;
  startServer(): Promise<void>;
  destroy(): Promise<void>;
}

async function startPrivateRedis(options: RedisOptions): Promise<TestRedis> {
  await ensureDebianPackage(REDIS_BIN, 'redis-server');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'clubhouse-redis-'));
  removeOnExit(dir);
  try {
    let port = 0;
    let tlsPort: number | undefined;
    let server: ManagedChild | undefined;
    const startServer = async (): Promise<void> => {
      const tls = options.tls;
      const tlsArgs =
        tls === undefined || tlsPort === undefined
          ? []
          : [
              '--tls-port',
              String(tlsPort),
              '--tls-cert-file',
              tls.certFile,
              '--tls-key-file',
              tls.keyFile,
              '--tls-ca-cert-file',
              tls.caFile,
              // Clients prove nothing: clubhouse verifies the server, not the other way round.
              '--tls-auth-clients',
              'no',
            ];
      // Nothing is persisted; --dir keeps any stray file out of the cwd.
      server = spawnManaged(REDIS_BIN, [
        '--port',
        String(port),
        '--bind',
        ...(options.bind ?? '127.0.0.1').split(' '),
        ...tlsArgs,
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        ...(options.args ?? []),
      ]);
      await waitForPing(port, server);
    };
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      if (options.tls !== undefined) tlsPort = await freePort();
      try {
        await startServer();
        break;
      } catch (error) {
        await server?.stop();
        // Another process may have taken the port between freePort() and bind().
        if (attempt < START_ATTEMPTS && /Address already in use/.test(String(error))) continue;
        throw error;
      }
    }
    const stopServer = async (): Promise<void> => server?.stop();
    let destroyed: Promise<void> | undefined;
    return handle(
      port,
      true,
      {
        stopServer,
        startServer: async () => {
          if (server?.running()) return;
          await startServer();
        },
        destroy() {
          destroyed ??= stopServer().then(() => removeNow(dir));
          return destroyed;
        },
      },
      tlsPort,
    );
  } catch (error) {
    removeNow(dir);
    throw error;
  }
}

async function waitForPing(port: number, server: ManagedChild): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await answersPing(port))) {
    if (!server.running()) throw new Error(`redis-server exited:\n${await server.finalOutput()}`);
    if (Date.now() > deadline)
      throw new Error(`redis-server not ready after ${START_TIMEOUT_MS} ms:\n${server.output()}`);
    await sleep(50);
  }
}
