// Sessions, throttle counters and sign-ins in progress in Redis (SESSION_STORE=redis://…, rediss://, redis-sentinel://);
// groups, users and the secret key stay in the database (store/open.ts combines the two). The key layout
// and the Lua scripts are scripts.ts's; the client and its failures, driver.ts's.
import type { Redis } from 'ioredis';
import type { RedisTarget } from '../options.ts';
import type { SharedLook } from '../shared-look.ts';
import type { FlowStore, SessionStore, ThrottleStore } from '../types.ts';
import { connectRedis, mapped } from './driver.ts';
import { redisFlowStore } from './flows.ts';
import { defineScripts, keys } from './scripts.ts';
import { cachedRedisSessions } from './session-cache.ts';
import { redisSessionStore } from './sessions.ts';
import { redisThrottleStore } from './throttle.ts';

export interface RedisStores {
  readonly sessions: SessionStore;
  readonly throttle: ThrottleStore;
  readonly flows: FlowStore;
  readonly client: Redis;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface RedisStoreOptions {
  /** Prefix of every key (REDIS_KEY_PREFIX), so that several services can share one Redis. */
  readonly keyPrefix: string;
  /** Hears of connection errors (the client keeps reconnecting by itself). */
  readonly onError?: (err: Error) => void;
  /** The database's shared look (issue 24): sessions are then kept in memory, made exact by it. */
  readonly look?: SharedLook;
}

/** Connects and returns the Redis session and throttle stores; fails when Redis is down. */
export async function openRedisStores(target: RedisTarget, options: RedisStoreOptions): Promise<RedisStores> {
  const client = await connectRedis(target, options.onError ?? (() => {}));
  const k = keys(options.keyPrefix);
  const run = defineScripts(client);
  return {
    client,
    sessions:
      options.look === undefined
        ? redisSessionStore(client, k, run)
        : cachedRedisSessions(client, k, run, options.look),
    throttle: redisThrottleStore(client, k, run),
    flows: redisFlowStore(client, k),
    ping: async () => {
      await mapped(client.ping());
    },
    close: async () => {
      if (client.status === 'end') return;
      try {
        await client.quit();
      } catch {
        client.disconnect();
      }
    },
  };
}
