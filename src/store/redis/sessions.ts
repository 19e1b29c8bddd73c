// Sessions in Redis (SESSION_STORE=redis://…): a hash per session, indexed by two sorted sets (the
// key layout is scripts.ts's); a write touching several keys is one Lua script. A stored expires_at
// is the truth (the caller's clock, as with SQL); TTLs only reclaim memory.
import type { Redis } from 'ioredis';
import type { SessionStore, SignInMethod, StoredSession } from '../types.ts';
import { mapped } from './driver.ts';
import type { Keys, Scripts } from './scripts.ts';

/** Sessions purged per script call, so that one call never blocks Redis for long. */
const PURGE_BATCH = 500;

/** The session store on `client` (contract §2, §9). */
export function redisSessionStore(client: Redis, k: Keys, run: Scripts): SessionStore {
  return {
    create: async (s, keep) => {
      const idHex = s.idHash.toString('hex');
      // The key lives as long as the session, at least 1 ms (PEXPIRE refuses 0).
      const ttlMs = Math.max(1, s.expiresAt - s.createdAt);
      const ended = await mapped(
        run.create(
          [k.session(idHex), k.userSessions(s.username), k.expiry, k.logState, k.log],
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
            s.method ?? '',
            s.passkey ?? '',
            k.seenPrefix,
          ],
        ),
      );
      return Number(ended);
    },
    list: async (username, now) => {
      const flat = (await mapped(
        run.list([k.userSessions(username)], [now, k.sessionPrefix, k.seenPrefix]),
      )) as string[];
      const sessions: StoredSession[] = [];
      const known = (value: string | undefined) => (value === undefined || value === '' ? null : value);
      for (let i = 0; i + 7 < flat.length; i += 8) {
        const lastSeen = known(flat[i + 3]);
        sessions.push({
          idHash: Buffer.from(flat[i] ?? '', 'hex'),
          createdAt: Number(flat[i + 1]),
          expiresAt: Number(flat[i + 2]),
          lastSeen: lastSeen === null ? null : Number(lastSeen),
          clientIp: known(flat[i + 4]),
          userAgent: known(flat[i + 5]),
          method: known(flat[i + 6]) as SignInMethod | null,
          passkey: known(flat[i + 7]),
        });
      }
      return sessions;
    },
    touch: async (sightings) => {
      await Promise.all(
        sightings.map(({ idHash, at }) => {
          const idHex = idHash.toString('hex');
          return mapped(run.touch([k.session(idHex), k.seen(idHex)], [at]));
        }),
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
      return (
        (await mapped(
          run.delete(
            [k.session(idHex), k.expiry, k.logState, k.log],
            [idHex, k.userSessionsPrefix, k.seenPrefix],
          ),
        )) === 1
      );
    },
    revokeUser: async (username) =>
      Number(
        await mapped(
          run.revokeUser(
            [k.userSessions(username), k.expiry, k.logState, k.log],
            [k.sessionPrefix, k.seenPrefix],
          ),
        ),
      ),
    countUser: async (username, now) =>
      await mapped(client.zcount(k.userSessions(username), `(${now}`, '+inf')),
    purgeExpired: async (now) => {
      // In batches, so one script never blocks Redis for long.
      let purged = 0;
      for (;;) {
        const n = Number(
          await mapped(
            run.purgeExpired(
              [k.expiry, k.logState, k.log],
              [now, PURGE_BATCH, k.sessionPrefix, k.userSessionsPrefix, k.seenPrefix],
            ),
          ),
        );
        purged += n;
        if (n < PURGE_BATCH) return purged;
      }
    },
    countActive: async (now) => await mapped(client.zcount(k.expiry, `(${now}`, '+inf')),
  };
}
