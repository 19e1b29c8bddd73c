// A Redis command fails when Redis does not answer it in time (a hung server: 503, contract §2), but a
// process that the host did not run for longer than that deadline (a crowded host, a long collection)
// must not fail a command whose reply is already waiting in its socket: that turned logins and checks
// into 503s under load (src/store/redis/driver.ts, inTime). Seen as the session-lifecycle property
// failing on "Redis sessions over …" under a load of 20–60 with 503 !== 200. The same holds for a
// connection: one made while the process was not running is taken, not timed out.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Redis } from 'ioredis';
import { StoreUnavailableError } from '../../src/store/errors.ts';
import { connectRedis, mapped } from '../../src/store/redis/driver.ts';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';

/** Longer than the command deadline (2 s), spent without yielding to the event loop. */
const STARVED_MS = 2600;

let redis: TestRedis;
let proxy: FaultProxy;
/** Straight to Redis: a proxy in this process would be starved too, and hold the reply back. */
let client: Redis;
/** Through the fault proxy, which can stop passing anything on. */
let proxied: Redis;
const standalone = (url: string) => ({ kind: 'standalone', url, tls: false, caFile: null }) as const;
before(async () => {
  redis = await startRedis();
  proxy = await startFaultProxy(Number(new URL(redis.url).port));
  client = await connectRedis(standalone(redis.url), () => {});
  proxied = await connectRedis(standalone(`redis://127.0.0.1:${proxy.port}`), () => {});
});
after(async () => {
  client.disconnect();
  proxied.disconnect();
  await proxy.close();
  await redis.stop();
});

function starve(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Not running: as a process the host does not schedule.
  }
}

test('a reply that arrived while the process was not running is taken, not a timeout', async () => {
  // From a setImmediate callback: when it returns, the event loop runs its timers (the command's
  // deadline, passed) before it polls the sockets (where the reply waits).
  const reply = await new Promise<Promise<string>>((resolve) =>
    setImmediate(() => {
      const sent = mapped(client.ping());
      sent.catch(() => {});
      starve(STARVED_MS);
      resolve(sent);
    }),
  );
  assert.equal(await reply, 'PONG');
});

test('a connection made while the process was not running is taken, not timed out', async () => {
  // Both from one check phase: the first begins to connect (the socket is made before the second
  // runs), the second keeps the process from reading the socket's "connected" for longer than the
  // connect deadline; the timers then run first.
  const connected = await new Promise<Promise<Redis>>((resolve) => {
    let connecting: Promise<Redis>;
    setImmediate(() => {
      connecting = connectRedis(standalone(redis.url), () => {});
      connecting.catch(() => {});
    });
    setImmediate(() => {
      starve(STARVED_MS);
      resolve(connecting);
    });
  });
  const late = await connected;
  try {
    assert.equal(await mapped(late.ping()), 'PONG');
  } finally {
    late.disconnect();
  }
});

test('a connection a hung Redis accepts but never answers is dropped, not waited on for ever', async () => {
  proxy.setFault({ kind: 'stall' });
  try {
    const began = performance.now();
    const failed = await connectRedis(standalone(`redis://127.0.0.1:${proxy.port}`), () => {}).then(
      (late) => {
        late.disconnect();
        return null;
      },
      (err: Error) => err,
    );
    assert.ok(failed instanceof StoreUnavailableError);
    // The connection's own deadline, not start-up's longest wait (10 s).
    assert.equal((failed.cause as Error).message, 'connect ETIMEDOUT');
    const waited = performance.now() - began;
    assert.ok(waited >= 4000 && waited < 10_000, `failed after ${Math.round(waited)} ms`);
  } finally {
    proxy.setFault({ kind: 'none' });
  }
});

test('a command Redis never answers still fails after the deadline: 503, not a wait for ever', async () => {
  proxy.setFault({ kind: 'stall' });
  try {
    const began = performance.now();
    await assert.rejects(mapped(proxied.ping()), StoreUnavailableError);
    const waited = performance.now() - began;
    assert.ok(waited >= 2000 && waited < 10_000, `failed after ${Math.round(waited)} ms`);
  } finally {
    proxy.setFault({ kind: 'none' });
  }
});
