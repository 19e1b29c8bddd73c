// Sessions in Redis with an in-process cache (issue 24): a check answered from memory, yet a logout,
// revoke, disable, the cap of contract §9 or logout-everywhere on any instance (or the CLI) is seen by
// the very next request everywhere (contract §2). How:
// - Every script that deletes sessions logs their hashes in the same script (session-log.ts), under
//   a sequence number; Redis runs scripts one at a time, so the log is in the order of the deletions.
// - A look (shared-look.ts, one script call) reads the entries after the last one read and evicts
//   them. If they were trimmed away, or the log's epoch changed (Redis lost its data), it empties the
//   whole cache. An answer from memory is given only after a look that began after the request.
// - A session enters the cache only from a read that returned it together with the log's epoch and
//   sequence at that instant (one script): kept only if the cache has read no entry beyond that
//   sequence, under the same epoch. Ids are never reused, so any deletion of it comes later, in an
//   entry the next look reads.
// - Expiry needs no entry: a kept session carries expires_at and is refused after it (it is never
//   extended). There is no negative caching: an unknown id goes to Redis.
import type { Redis } from 'ioredis';
import { SESSION_CACHE_ENTRIES, SessionMemory } from '../session-memory.ts';
import type { SharedLook } from '../shared-look.ts';
import type { SessionCache, SessionStore } from '../types.ts';
import { mapped } from './driver.ts';
import type { Keys, Scripts } from './scripts.ts';
import { redisSessionStore } from './sessions.ts';

/** Characters of one hash in a log entry (SHA-256 in hex). */
const HASH_HEX = 64;

/** The Redis session store with its cache, made exact by `look`. */
export function cachedRedisSessions(
  client: Redis,
  k: Keys,
  run: Scripts,
  look: SharedLook,
  capacity = SESSION_CACHE_ENTRIES,
): SessionStore & SessionCache {
  const store = redisSessionStore(client, k, run);
  const cache = new SessionMemory(look, capacity);
  /** The log as far as the cache has applied it ('' and -1: not yet looked). */
  let epoch = '';
  let seq = -1;

  look.add(async () => {
    const reply = (await mapped(run.sessionLog([k.logState, k.log], [seq]))) as string[];
    const [now, last, state] = reply;
    if (now !== epoch || state !== 'ok' || Number(last) < seq) {
      cache.clear();
    } else {
      for (let i = 3; i < reply.length; i++) {
        const entry = reply[i]!;
        for (let at = 0; at < entry.length; at += HASH_HEX) cache.forget(entry.slice(at, at + HASH_HEX));
      }
    }
    epoch = now ?? '';
    seq = Number(last);
  });

  return {
    ...store,
    peek: (key, now) => cache.peek(key, now),
    get: async (idHash, now) => {
      const key = idHash.toString('hex');
      const [username, expiresAt, readEpoch, readSeq] = (await mapped(
        run.sessionRead([k.session(key), k.logState], []),
      )) as string[];
      if (username === '' || username === undefined || Number(expiresAt) <= now) return null;
      const record = { username, expiresAt: Number(expiresAt) };
      // Only if no entry read since could be about it (see above).
      if (readEpoch !== '' && readEpoch === epoch && Number(readSeq) >= seq) cache.remember(key, record);
      return record;
    },
    delete: (idHash) => {
      cache.forget(idHash.toString('hex'));
      return store.delete(idHash);
    },
  };
}
