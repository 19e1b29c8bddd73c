// Redis Sentinel for tests (docs/operations.md: Redis Sentinel): a primary, one replica and three
// sentinels (Debian `redis-sentinel`) on loopback, in a temp dir, with short failure detection so a
// failover takes seconds. killPrimary() is the fault; the sentinels then promote the replica.

import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { ensureDebianPackage } from './apt.ts';
import { type ManagedChild, removeNow, removeOnExit, spawnManaged } from './child.ts';
import { freePorts } from './ports.ts';
import { probeClient } from './redis.ts';

const REDIS_BIN = '/usr/bin/redis-server';
const SENTINEL_BIN = '/usr/bin/redis-sentinel';
const MASTER_NAME = 'clubhouse';
const READY_TIMEOUT_MS = 60_000;

export interface TestSentinel {
  /** SESSION_STORE for clubhouse: redis-sentinel://127.0.0.1:a,127.0.0.1:b,127.0.0.1:c/clubhouse */
  readonly sessionStore: string;
  readonly primaryPort: number;
  readonly replicaPort: number;
  /** The port the sentinels currently name as primary. */
  primaryNow(): Promise<number>;
  /** Waits until the replica has acknowledged every write made so far on the primary. */
  waitForReplication(): Promise<void>;
  /** SIGKILL to the primary: no shutdown, no last save, connections cut. */
  killPrimary(): Promise<void>;
  stop(): Promise<void>;
}

async function ask<T>(port: number, work: (client: Redis) => Promise<T>): Promise<T> {
  const client = probeClient(port);
  try {
    await client.connect();
    return await work(client);
  } finally {
    client.disconnect();
  }
}

async function until(what: string, children: ManagedChild[], condition: () => Promise<boolean>) {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (await condition().catch(() => false)) return;
    const dead = children.find((child) => !child.running());
    if (dead !== undefined) throw new Error(`a Redis process exited:\n${await dead.finalOutput()}`);
    if (Date.now() > deadline) throw new Error(`${what} not within ${READY_TIMEOUT_MS} ms`);
    await sleep(100);
  }
}

/** Starts primary, replica and three sentinels; resolves once the sentinels know one another. */
export async function startSentinel(): Promise<TestSentinel> {
  await ensureDebianPackage(REDIS_BIN, 'redis-server');
  await ensureDebianPackage(SENTINEL_BIN, 'redis-sentinel');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'clubhouse-sentinel-'));
  removeOnExit(dir);
  const children: ManagedChild[] = [];
  try {
    const [primaryPort, replicaPort, ...sentinelPorts] = (await freePorts(5)) as [
      number,
      number,
      ...number[],
    ];
    const server = async (name: string, port: number, extra: string[]) => {
      await mkdir(path.join(dir, name));
      const child = spawnManaged(REDIS_BIN, [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        path.join(dir, name),
        ...extra,
      ]);
      children.push(child);
      return child;
    };
    const primary = await server('primary', primaryPort, []);
    await server('replica', replicaPort, ['--replicaof', '127.0.0.1', String(primaryPort)]);
    for (const port of sentinelPorts) {
      const file = path.join(dir, `sentinel-${port}.conf`);
      // Sentinel rewrites its file as it learns; quorum 2 of 3; a primary silent for 1 s is down.
      await writeFile(
        file,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${primaryPort} 2`,
          `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
          `sentinel failover-timeout ${MASTER_NAME} 10000`,
          `sentinel parallel-syncs ${MASTER_NAME} 1`,
          '',
        ].join('\n'),
      );
      children.push(spawnManaged(SENTINEL_BIN, [file]));
    }
    await until('replica in sync', children, async () =>
      (await ask(replicaPort, (c) => c.info('replication'))).includes('master_link_status:up'),
    );
    // Each sentinel must see the replica and the two others, or it could not elect a leader.
    await until('sentinels acquainted', children, async () => {
      for (const port of sentinelPorts) {
        const [replicas, others] = await ask(port, async (c) => [
          (await c.call('SENTINEL', 'REPLICAS', MASTER_NAME)) as unknown[],
          (await c.call('SENTINEL', 'SENTINELS', MASTER_NAME)) as unknown[],
        ]);
        if (replicas.length < 1 || others.length < 2) return false;
      }
      return true;
    });
    const primaryNow = async () => {
      for (const port of sentinelPorts) {
        try {
          const [, found] = (await ask(port, (c) =>
            c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME),
          )) as [string, string];
          return Number(found);
        } catch {
          // Ask the next sentinel.
        }
      }
      throw new Error('no sentinel answers');
    };
    return {
      sessionStore: `redis-sentinel://${sentinelPorts.map((p) => `127.0.0.1:${p}`).join(',')}/${MASTER_NAME}`,
      primaryPort,
      replicaPort,
      primaryNow,
      async waitForReplication() {
        const acked = await ask(primaryPort, (c) => c.call('WAIT', '1', '5000'));
        if (acked !== 1) throw new Error(`the replica acknowledged ${String(acked)} of 1`);
      },
      killPrimary: () => primary.stop('SIGKILL'),
      async stop() {
        await Promise.all(children.map((child) => child.stop()));
        removeNow(dir);
      },
    };
  } catch (error) {
    await Promise.all(children.map((child) => child.stop('SIGKILL')));
    removeNow(dir);
    throw error;
  }
}
