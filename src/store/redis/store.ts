// Sessions, throttle counters and sign-ins in progress in Redis (SESSION_STORE=redis://…, rediss://,
// redis-sentinel://); groups, users and the secret key stay in the database (store/open.ts combines
// the two). The key layout and the Lua scripts are scripts.ts's; the client and its failures,
// driver.ts's; a serving process's session memory, session-memory.ts's.
import type { Redis } from 'ioredis';
import { StoreMisconfiguredError } from '../errors.ts';
import type { AnswerWindow, CatchUpRounds } from '../freshness/gate.ts';
import type { RedisTarget } from '../options.ts';
import type { FlowStore, SessionMemoryAnswers, SessionStore, ThrottleStore } from '../types.ts';
import { connectRedis, inTime, mapped } from './driver.ts';
import { redisFlowStore } from './flows.ts';
import { missingEventFlags } from './key-events.ts';
import { defineScripts, keys } from './scripts.ts';
import { redisSessionMemory } from './session-memory.ts';
import { redisSessionStore } from './sessions.ts';
import { redisThrottleStore } from './throttle.ts';

export interface RedisStores {
  readonly sessions: SessionStore;
  readonly throttle: ThrottleStore;
  readonly flows: FlowStore;
  readonly client: Redis;
  /** The session memory's answers and its catch-up rounds; null without memory. */
  readonly memory: { readonly answers: SessionMemoryAnswers; readonly rounds: CatchUpRounds } | null;
  /** Throws StoreUnavailableError when Redis does not answer, StoreMisconfiguredError when it evicts. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface RedisStoreOptions {
  /** Prefix of every key (REDIS_KEY_PREFIX), so that several services can share one Redis. */
  readonly keyPrefix: string;
  /** Hears of connection errors (the client keeps reconnecting by itself). */
  readonly onError?: (err: Error) => void;
  /** Keep sessions in memory: at most `capacity`, answering through `window`. */
  readonly memory?: { readonly capacity: number; readonly window: AnswerWindow };
  /** Hears when the memory's key events stop or flow again (key-events.ts). */
  readonly onKeyEvents?: (flowing: boolean, why: string) => void;
}

/**
 * Why this Redis may drop a session or a throttle counter on its own, or null: with maxmemory set, any
 * policy but noeviction evicts (every key the service writes has a TTL, so the volatile-* policies can
 * pick them all). Unknown (a Redis that refuses CONFIG, as managed services may): null.
 */
async function evictionRisk(client: Redis): Promise<string | null> {
  let policy: string;
  let maxmemory: string;
  try {
    const reply = (await inTime(client.call('CONFIG', 'GET', 'maxmemory*'))) as string[];
    const settings = new Map<string, string>();
    for (let i = 0; i + 1 < reply.length; i += 2) settings.set(reply[i]!, reply[i + 1]!);
    policy = settings.get('maxmemory-policy') ?? 'noeviction';
    maxmemory = settings.get('maxmemory') ?? '0';
  } catch {
    return null;
  }
  if (policy === 'noeviction' || maxmemory === '0') return null;
  return `maxmemory-policy ${policy} with maxmemory ${maxmemory} evicts sessions and throttle counters; set maxmemory-policy noeviction (docs/operations.md)`;
}

/** What `clubhouse config check` says of the sessions' Redis; it changes nothing there. */
export type RedisReport =
  | { readonly checked: false; readonly reason: string }
  | {
      readonly checked: true;
      /** Why it would evict sessions, or null (not known when CONFIG is refused). */
      readonly evicts: string | null;
      /** The keyspace-event flags the session memory lacks ('' none; null: CONFIG refused). */
      readonly missingEvents: string | null;
    };

/** Reads the eviction policy and the keyspace events of `target` (config check). */
export async function redisReport(target: RedisTarget): Promise<RedisReport> {
  let client: Redis | null = null;
  try {
    client = await connectRedis(target, () => {});
    const evicts = await evictionRisk(client);
    let missingEvents: string | null = null;
    try {
      const reply = (await inTime(client.call('CONFIG', 'GET', 'notify-keyspace-events'))) as string[];
      missingEvents = missingEventFlags(reply[1] ?? '');
    } catch {
      missingEvents = null;
    }
    return { checked: true, evicts, missingEvents };
  } catch (err) {
    return { checked: false, reason: (err as Error).message };
  } finally {
    client?.disconnect();
  }
}

/** Connects and returns the Redis session and throttle stores; fails when Redis is down or evicts. */
export async function openRedisStores(target: RedisTarget, options: RedisStoreOptions): Promise<RedisStores> {
  const client = await connectRedis(target, options.onError ?? (() => {}));
  const risk = await evictionRisk(client);
  if (risk !== null) {
    client.disconnect();
    throw new StoreMisconfiguredError('sessions', risk);
  }
  const k = keys(options.keyPrefix);
  const run = defineScripts(client);
  const memory =
    options.memory === undefined
      ? null
      : redisSessionMemory(client, k, run, options.memory.window, options.memory.capacity, (flowing, why) =>
          options.onKeyEvents?.(flowing, why),
        );
  await memory?.events.start();
  return {
    client,
    sessions: memory?.store ?? redisSessionStore(client, k, run),
    memory: memory === null ? null : { answers: memory.answers, rounds: memory.rounds },
    throttle: redisThrottleStore(client, k, run),
    flows: redisFlowStore(client, k),
    ping: async () => {
      await mapped(client.ping());
      const risk = await evictionRisk(client);
      if (risk !== null) throw new StoreMisconfiguredError('sessions', risk);
    },
    close: async () => {
      await memory?.events.close();
      if (client.status === 'end') return;
      try {
        await inTime(client.quit());
      } catch {
        client.disconnect();
      }
    },
  };
}
