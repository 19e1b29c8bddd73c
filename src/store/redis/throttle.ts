// The throttle counters in Redis (contract §3): the same facts as the SQL stores (sql/throttle.ts), as
// sorted sets and hashes under the key layout of scripts.ts; writes touching several keys are Lua
// scripts or a MULTI.
import type { Redis } from 'ioredis';
import type { ThrottleStore } from '../types.ts';
import { execMulti, mapped } from './driver.ts';
import type { Keys, Scripts } from './scripts.ts';

/** The throttle store (contract §3): failures, known clients and guesses in flight. */
export function redisThrottleStore(client: Redis, k: Keys, run: Scripts): ThrottleStore {
  return {
    beginGuess: async (guess, limit, now, windowMs) => {
      const reply = (await mapped(
        run.beginGuess(
          [k.throttle(guess.key), k.pending(guess.key)],
          [
            guess.fingerprint,
            guess.id,
            limit ?? -1,
            now,
            now - windowMs,
            guess.expiresAt,
            Math.max(1, guess.expiresAt - now),
          ],
        ),
      )) as (number | string)[];
      if (reply[0] === 1) return { admitted: true };
      return { admitted: false, pending: Number(reply[1]), failures: reply.slice(2).map(Number) };
    },
    endGuess: async (guess) => {
      await mapped(client.hdel(k.pending(guess.key), guess.id));
    },
    recordFailure: async (keyNames, fingerprint, now, windowMs) => {
      const multi = client.multi();
      for (const key of new Set(keyNames)) {
        const name = k.throttle(key);
        // GT: an existing fingerprint keeps the later time (SQLite's max(at)); new ones are added.
        multi.zadd(name, 'GT', now, fingerprint);
        multi.zremrangebyscore(name, '-inf', now - windowMs);
        multi.pexpire(name, windowMs);
      }
      await execMulti(multi);
    },
    recentFailures: async (key, limit, now, windowMs) => {
      const flat = await mapped(
        client.zrevrangebyscore(
          k.throttle(key),
          '+inf',
          `(${now - windowMs}`,
          'WITHSCORES',
          'LIMIT',
          0,
          limit,
        ),
      );
      // WITHSCORES: member, score, member, score… — the scores are the times.
      return flat.filter((_, index) => index % 2 === 1).map(Number);
    },
    clear: async (key) => {
      await mapped(client.unlink(k.throttle(key)));
    },
    rememberClient: async (username, clientIp, now, ttlMs) => {
      const name = k.knownClients(username);
      const multi = client.multi();
      multi.zadd(name, now + ttlMs, clientIp);
      multi.zremrangebyscore(name, '-inf', now);
      multi.pexpire(name, ttlMs);
      await execMulti(multi);
    },
    isKnownClient: async (username, clientIp, now) => {
      const expiresAt = await mapped(client.zscore(k.knownClients(username), clientIp));
      return expiresAt !== null && Number(expiresAt) > now;
    },
    // Every throttle key carries a TTL (a window after its last failure, or the latest expiry of a
    // guess) and is pruned on each write, so Redis reclaims the memory by itself: nothing to scan.
    purgeExpired: async () => {},
  };
}
