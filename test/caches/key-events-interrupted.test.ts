// A catch-up's barrier vouches that every keyspace event before it was heard (src/store/redis/
// key-events.ts); it cannot when the subscribed connection was lost in between, as events published
// meanwhile went nowhere. Redis itself drops a subscriber that does not read its events
// (client-output-buffer-limit pubsub), which is what a process the host does not run is. The memory is
// emptied only once the new subscription has proven itself with a barrier of its own; a catch-up
// barrier begun before the loss whose event arrives on the new subscription before that (its script
// resent after the reconnect) must not pass, or memory that missed events would answer.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { SessionKeyEvents } from '../../src/store/redis/key-events.ts';
import { keys } from '../../src/store/redis/scripts.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';

let redis: TestRedis;
let client: Redis;
/** Another client, as the operator's: kills the subscriber and writes the barrier's key. */
let admin: Redis;
let events: SessionKeyEvents;
/** What the memory was told, in order. */
const told: string[] = [];
before(async () => {
  // Private: killing every subscriber of a shared server would disturb other suites.
  redis = await startRedis({ private: true });
  client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  admin = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await admin.connect();
  events = new SessionKeyEvents(client, keys(redis.keyPrefix()), {
    onSessionKey: () => {},
    onLost: () => told.push('memory emptied'),
    onState: (flowing) => told.push(flowing ? 'events flow' : 'events stopped'),
  });
  await events.start();
  assert.equal(events.flowing, true);
});
after(async () => {
  await events.close();
  client.disconnect();
  admin.disconnect();
  await redis.stop();
});

/**
 * Holds back the MULTIs `client` sends (the re-arming barrier's write) until `release`; `reached`
 * resolves when one is held: the new subscription is then in place and memory not yet emptied.
 */
function holdMulti(): { reached: Promise<void>; release(): void; restore(): void } {
  const original = client.multi;
  let reachedNow = () => {};
  const reached = new Promise<void>((resolve) => {
    reachedNow = resolve;
  });
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  client.multi = ((...args: Parameters<Redis['multi']>) => {
    const multi = original.apply(client, args);
    const exec = multi.exec.bind(multi);
    multi.exec = (async () => {
      reachedNow();
      await released;
      return exec();
    }) as typeof multi.exec;
    return multi;
  }) as typeof client.multi;
  const restore = () => {
    client.multi = original;
  };
  return { reached, release, restore };
}

test('a barrier begun before the subscribed connection was lost does not pass on the new one', async () => {
  const barrier = events.barrier();
  const verdict = barrier.passed.then(
    () => 'passed',
    (err: Error) => `failed: ${err.message}`,
  );
  const held = holdMulti();
  try {
    told.length = 0;
    await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await held.reached;
    assert.deepEqual(told, ['events stopped'], 'resubscribed, memory not yet emptied');
    // The catch-up's script runs only now (resent after a reconnect): its event comes on the new
    // subscription, while memory still holds what the lost events would have evicted.
    await admin.multi().set(barrier.key, '1', 'PX', 60000).del(barrier.key).exec();
    assert.match(await verdict, /^failed/, 'a catch-up across the loss is not complete');
  } finally {
    held.release();
    held.restore();
  }
  while (!events.flowing) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(told, ['events stopped', 'memory emptied', 'events flow']);
  // And catch-ups begun after it pass again.
  const next = events.barrier();
  await admin.multi().set(next.key, '1', 'PX', 60000).del(next.key).exec();
  await next.passed;
});
