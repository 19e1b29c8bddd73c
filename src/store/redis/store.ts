// Sessions and throttle counters in Redis (SESSION_STORE=redis://…); groups and users stay in the
// database. Key layout, under a configurable prefix P (default "clubhouse:"):
//
//   P session:<sha256 hex>          hash {username, created_at, expires_at, and when known client_ip,
//                                   user_agent, last_seen}, PEXPIRE to its expiry
//   P user-sessions:<username>      sorted set: session hex → expires_at (revokeUser, countUser)
//   P session-expiry                sorted set: session hex → expires_at, every session
//                                   (countActive: ZCOUNT, O(log N); purgeExpired: a range, O(log N + M))
//   P throttle:<key>                sorted set: fingerprint → time of the failure (ZADD GT = max),
//                                   pruned on write, PEXPIRE one window after the last failure
//   P known-clients:<username>      sorted set: client IP → expires_at, PEXPIRE to the latest expiry
//   P throttle-pending:<key>        hash: guess id → "expires_at|fingerprint", guesses in flight,
//                                   PEXPIRE to the latest expiry
//
// Writes touching several keys are Lua scripts (atomic). The scripts derive some key names from
// data (a session's user), so this needs a standalone Redis or Sentinel, not Redis Cluster.
// A stored expires_at is the truth (the caller's clock, as with SQL); TTLs only reclaim memory.
import { Redis } from 'ioredis';
import { StoreUnavailableError } from '../errors.ts';
import type { SessionStore, StoredSession, ThrottleStore } from '../types.ts';
import { defineScripts, type Keys, keys, mapped, type Scripts } from './client.ts';
import { redisThrottleStore } from './throttle.ts';
import { parseRedisTarget, type RedisTarget, redisTlsOptions } from './url.ts';

export const DEFAULT_KEY_PREFIX = 'clubhouse:';

/** Client settings: a dead Redis answers within a bounded time, and the client reconnects forever. */
export const REDIS_SETTINGS = {
  // Commands fail at once while disconnected instead of queueing behind a reconnect.
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  // A command Redis accepted but never answered (a hung server) fails after this long.
  commandTimeout: 2000,
  connectTimeout: 2000,
  // Reconnect with a backoff capped at 1 s, forever: the store recovers when Redis is back.
  retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
  lazyConnect: true,
} as const;

const PURGE_BATCH = 500;

function sessionStore(client: Redis, k: Keys, run: Scripts): SessionStore {
  return {
    create: async (s, keep) => {
      const idHex = s.idHash.toString('hex');
      // The key lives as long as the session, at least 1 ms (PEXPIRE refuses 0).
      const ttlMs = Math.max(1, s.expiresAt - s.createdAt);
      const ended = await mapped(
        run.create(
          [k.session(idHex), k.userSessions(s.username), k.expiry],
          [
            idHex,
            s.username,
            s.createdAt,
            s.expiresAt,
            ttlMs,
            keep,
            k.sessionPrefix,
            s.clientIp ?? '',
            s.userAgent ?? '',
          ],
        ),
      );
      return Number(ended);
    },
    list: async (username, now) => {
      const flat = (await mapped(run.list([k.userSessions(username)], [now, k.sessionPrefix]))) as string[];
      const sessions: StoredSession[] = [];
      const known = (value: string | undefined) => (value === undefined || value === '' ? null : value);
      for (let i = 0; i + 5 < flat.length; i += 6) {
        const lastSeen = known(flat[i + 3]);
        sessions.push({
          idHash: Buffer.from(flat[i] ?? '', 'hex'),
          createdAt: Number(flat[i + 1]),
          expiresAt: Number(flat[i + 2]),
          lastSeen: lastSeen === null ? null : Number(lastSeen),
          clientIp: known(flat[i + 4]),
          userAgent: known(flat[i + 5]),
        });
      }
      return sessions;
    },
    touch: async (sightings) => {
      await Promise.all(
        sightings.map(({ idHash, at }) => mapped(run.touch([k.session(idHash.toString('hex'))], [at]))),
      );
    },
    get: async (idHash, now) => {
      const [username, expiresAt] = await mapped(
        client.hmget(k.session(idHash.toString('hex')), 'username', 'expires_at'),
      );
      if (username == null || expiresAt == null || Number(expiresAt) <= now) return null;
      return { username, expiresAt: Number(expiresAt) };
    },
    delete: async (idHash) => {
      const idHex = idHash.toString('hex');
      return (await mapped(run.delete([k.session(idHex), k.expiry], [idHex, k.userSessionsPrefix]))) === 1;
    },
    revokeUser: async (username) =>
      Number(await mapped(run.revokeUser([k.userSessions(username), k.expiry], [k.sessionPrefix]))),
    countUser: async (username, now) =>
      await mapped(client.zcount(k.userSessions(username), `(${now}`, '+inf')),
    purgeExpired: async (now) => {
      // In batches, so one script never blocks Redis for long.
      let purged = 0;
      for (;;) {
        const n = Number(
          await mapped(
            run.purgeExpired([k.expiry], [now, PURGE_BATCH, k.sessionPrefix, k.userSessionsPrefix]),
          ),
        );
        purged += n;
        if (n < PURGE_BATCH) return purged;
      }
    },
    countActive: async (now) => await mapped(client.zcount(k.expiry, `(${now}`, '+inf')),
  };
}

export interface RedisStores {
  readonly sessions: SessionStore;
  readonly throttle: ThrottleStore;
  readonly client: Redis;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface RedisStoreOptions {
  readonly keyPrefix?: string;
  /** Hears of connection errors (the client keeps reconnecting by itself). */
  readonly onError?: (err: Error) => void;
}

/**
 * Sentinel (issue 17): ask the sentinels for the primary on every (re)connect, and drop a connection
 * to a primary that was demoted (READONLY): the next connection goes to the new one. Commands in
 * between fail at once (503), never queue. (ioredis's failoverDetector is left off: its sentinel
 * subscribers outlive quit() and reconnect forever.)
 */
const SENTINEL_SETTINGS = {
  role: 'master',
  sentinelRetryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
  sentinelCommandTimeout: 2000,
  reconnectOnError: (err: Error) => /^READONLY\b/.test(err.message),
} as const;

/** Longest start-up wait for a first connection (ioredis itself retries a sentinel list forever). */
const FIRST_CONNECT_DEADLINE_MS = 10_000;

function createClient(target: RedisTarget): Redis {
  if (target.kind === 'sentinel') {
    return new Redis({
      ...REDIS_SETTINGS,
      ...SENTINEL_SETTINGS,
      sentinels: target.sentinels.map(({ host, port }) => ({ host, port })),
      name: target.name,
    });
  }
  const tls = redisTlsOptions(target);
  return new Redis(target.url, tls === undefined ? REDIS_SETTINGS : { ...REDIS_SETTINGS, tls });
}

/** Connects and returns the Redis session and throttle stores; fails when Redis is down. */
export async function openRedisStores(
  target: string | RedisTarget,
  options: RedisStoreOptions = {},
): Promise<RedisStores> {
  const parsed = typeof target === 'string' ? parseRedisTarget(target, null) : { ok: true as const, target };
  if (!parsed.ok) throw new Error(`${parsed.variable}: ${parsed.message}`);
  const client = createClient(parsed.target);
  // Without a listener every reconnect attempt would print "Unhandled error event".
  client.on('error', options.onError ?? (() => {}));
  // ioredis rejects connect() with "Connection is closed."; the reason (a refused certificate,
  // say) came as an 'error' event first, and is what an operator needs to read.
  let reason: Error | undefined;
  const remember = (err: Error) => {
    reason = err;
  };
  client.on('error', remember);
  let deadline: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.connect(),
      new Promise((_, reject) => {
        deadline = setTimeout(
          () => reject(new Error(`no Redis primary after ${FIRST_CONNECT_DEADLINE_MS} ms`)),
          FIRST_CONNECT_DEADLINE_MS,
        );
      }),
    ]);
  } catch (err) {
    client.disconnect();
    throw new StoreUnavailableError('sessions', { cause: reason ?? err });
  } finally {
    clearTimeout(deadline);
    client.removeListener('error', remember);
  }
  const k = keys(options.keyPrefix ?? DEFAULT_KEY_PREFIX);
  const run = defineScripts(client);
  return {
    client,
    sessions: sessionStore(client, k, run),
    throttle: redisThrottleStore(client, k, run),
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
