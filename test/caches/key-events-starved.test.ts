// A process that does not run for longer than a barrier's deadline (a crowded host descheduling it, a
// long collection) must not conclude that Redis's keyspace events stopped when the barrier's event is
// already waiting in its subscribed socket: that would turn the session memory off, and every check
// would go to Redis, for no reason (src/store/redis/key-events.ts). The deadline counts only once the
// process has read its sockets after it; events that really stop are still found out.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { SessionKeyEvents } from '../../src/store/redis/key-events.ts';
import { keys } from '../../src/store/redis/scripts.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';

/** Longer than the barrier's deadline (2 s), spent without yielding to the event loop. */
const STARVED_MS = 2600;

let redis: TestRedis;
let client: Redis;
let events: SessionKeyEvents;
const states: [boolean, string][] = [];
before(async () => {
  redis = await startRedis({ private: true });
  client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  events = new SessionKeyEvents(client, keys(redis.keyPrefix()), {
    onSessionKey: () => {},
    onLost: () => {},
    onState: (flowing, why) => states.push([flowing, why]),
  });
  await events.start();
  assert.equal(events.flowing, true, 'events flow on a Redis that lets the service turn them on');
});
after(async () => {
  await events.close();
  client.disconnect();
  await redis.stop();
});

function starve(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Not running: as a process the host does not schedule.
  }
}

test('a barrier whose event arrived while the process was not running passes', async () => {
  // From a setImmediate callback: when it returns, the event loop runs its timers (the barrier's
  // deadline, passed) before it polls the sockets (where the barrier's event waits).
  const { barrier, wrote } = await new Promise<{
    barrier: ReturnType<SessionKeyEvents['barrier']>;
    wrote: Promise<unknown>;
  }>((resolve) =>
    setImmediate(() => {
      const barrier = events.barrier();
      barrier.passed.catch(() => {});
      // The barrier's write leaves at once; Redis answers and publishes while this process is busy.
      const wrote = client.multi().set(barrier.key, '1', 'PX', 60000).del(barrier.key).exec();
      starve(STARVED_MS);
      resolve({ barrier, wrote });
    }),
  );
  await wrote;
  await barrier.passed;
  assert.equal(events.flowing, true, 'the memory stays on');
  assert.deepEqual(
    states.filter(([flowing]) => !flowing),
    [],
    'no "events stopped" was concluded',
  );
});

test('a barrier whose event never comes still fails after the deadline, and turns the memory off', async () => {
  const barrier = events.barrier();
  // No write: no event will come.
  await assert.rejects(barrier.passed, /no barrier event/);
  assert.equal(events.flowing, false);
  assert.equal(states.at(-1)?.[0], false);
});
