// Sessions on PostgreSQL with an in-process cache (issue 24): a check answered from memory, yet a
// logout, revoke, disable, the cap of contract §9, logout-everywhere or a username migration on any
// instance (or the CLI) is seen by the very next request everywhere (contract §2). How:
// - Every statement deleting sessions logs their hashes under the next seq of session_log_head, by a
//   trigger in the deleting transaction (migration 8). The head row's lock orders the seqs as the
//   transactions commit, so a snapshot that sees seq n sees every entry up to n.
// - A look (shared-look.ts, one statement) reads the head and the entries after the last seq read,
//   in one snapshot, and evicts them. If entries it never read were purged, the seq went backwards
//   (a restored database) or the epoch moved (TRUNCATE), it empties the whole cache. An answer from
//   memory is given only after a look that began after the request.
// - A session enters the cache only from a read that returned it with the head's seq and epoch in the
//   same snapshot: kept only if the cache has read no entry beyond that seq, under the same epoch.
//   Ids are never reused, so any deletion of it has a later seq, which the next look reads.
// - Expiry needs no entry: a kept session carries expires_at and is refused after it (never
//   extended). There is no negative caching: an unknown id goes to the database.
import type pg from 'pg';
import { SESSION_CACHE_ENTRIES, SessionMemory } from '../session-memory.ts';
import type { SharedLook } from '../shared-look.ts';
import type { SqlDriver } from '../sql/driver.ts';
import { sqlSessionStore } from '../sql/sessions.ts';
import type { SessionCache, SessionStore } from '../types.ts';
import { query } from './driver.ts';
import type { PostgresLook } from './look.ts';

/** How long log entries are kept: an instance idle for longer empties its cache at its next look. */
const DELETION_LOG_RETENTION_MS = 10 * 60 * 1000;

/** The head, the first entry kept, and the hashes logged after $n (none when $n < 0), in one snapshot. */
const lookColumns = (n: number) => `(SELECT seq FROM session_log_head) AS seq,
    (SELECT epoch FROM session_log_head) AS epoch, (SELECT min(seq) FROM session_deletions) AS first,
    (SELECT coalesce(array_agg(d.id_hash), '{}') FROM session_deletions d
      WHERE $${n}::bigint >= 0 AND d.seq > $${n}) AS hashes`;
/** The session (the check's rule: live until expires_at) with the head at the same snapshot. */
const READ = `SELECT h.seq, h.epoch, s.username, s.expires_at FROM session_log_head h
  LEFT JOIN sessions s ON s.id_hash = $1 AND s.expires_at > $2`;
/** Drops the entries older than the retention (a prefix of the log: whole seqs only). */
const PURGE_LOG = `DELETE FROM session_deletions WHERE seq <= (SELECT max(seq) FROM session_deletions
  WHERE at <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1)`;

/** The PostgreSQL session store with its cache, made exact by `look`. */
export function cachedPostgresSessions(
  pool: pg.Pool,
  driver: SqlDriver,
  look: SharedLook,
  lookQuery: PostgresLook,
  capacity = SESSION_CACHE_ENTRIES,
): SessionStore & SessionCache {
  const store = sqlSessionStore(driver);
  const cache = new SessionMemory(look, capacity);
  /** The log as far as the cache has applied it (-1: not yet looked). */
  let epoch = -1;
  let seq = -1;

  const apply = (row: Record<string, unknown>) => {
    const last = Number(row['seq']);
    const first = row['first'] === null ? null : Number(row['first']);
    const lost = seq >= 0 && last > seq && (first === null || first > seq + 1);
    if (Number(row['epoch']) !== epoch || last < seq || lost) cache.clear();
    else for (const hash of row['hashes'] as Buffer[]) cache.forget(hash.toString('hex'));
    epoch = Number(row['epoch']);
    seq = last;
  };
  lookQuery.add({ columns: lookColumns, values: () => [seq], apply });

  return {
    ...store,
    peek: (key, now) => cache.peek(key, now),
    get: async (idHash, now) => {
      const { rows } = await query(pool, READ, [idHash, now], 'session-read');
      const row = rows[0]!;
      if (row['username'] === null) return null;
      const record = { username: String(row['username']), expiresAt: Number(row['expires_at']) };
      // Only if no entry read since could be about it (see above).
      if (epoch >= 0 && Number(row['epoch']) === epoch && Number(row['seq']) >= seq)
        cache.remember(idHash.toString('hex'), record);
      return record;
    },
    delete: (idHash) => {
      cache.forget(idHash.toString('hex'));
      return store.delete(idHash);
    },
    purgeExpired: async (now) => {
      const purged = await store.purgeExpired(now);
      await query(pool, PURGE_LOG, [DELETION_LOG_RETENTION_MS]);
      return purged;
    },
  };
}
