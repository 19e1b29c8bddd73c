// Sessions on SQLite with an in-process cache (issue 8: a check is answered without touching the
// database file). Exactness across processes (contract §2: a logout, revoke or disable takes effect
// on the very next request in every process) comes from the session_deletions log: before answering
// from memory, a process asks the commit watch (commit-watch.ts: one pread of the WAL-index header)
// whether anything was committed since it last caught up; only then does it ask SQLite whether
// another connection committed (PRAGMA data_version), and if so evicts every session that was deleted
// meanwhile. Its own deletions it evicts at once, the sessions a login ends beyond the per-user cap
// (contract §9) included: they go through the same log.
// The session SQL itself is the shared layer's (sql/sessions.ts), run synchronously here (a miss's
// lookup prepared once, without the steps' machinery: it is the check's path); what only SQLite has,
// the deletion log (migration 3) and PRAGMA data_version, is read here.
import type { DatabaseSync } from 'node:sqlite';
import { toSessionRecord } from '../sql/rows.ts';
import { SESSION_GET, sessionSteps } from '../sql/sessions.ts';
import type { SessionCache, SessionRecord, SessionStore } from '../types.ts';
import { type CommitWatch, unwatched } from './commit-watch.ts';
import { SQLITE_DIALECT, sqliteSql } from './dialect.ts';
import { sqliteDriver } from './driver.ts';

/** Sessions kept in memory per process; beyond this the oldest entries are dropped. */
const SESSION_CACHE_ENTRIES = 100_000;
/** How long deletion log entries are kept: a process idle for longer forgets its whole cache. */
const DELETION_LOG_RETENTION_MS = 10 * 60 * 1000;

type Call = <T>(work: () => T) => Promise<T>;

/**
 * The SQLite session store with its cache; `call` maps SQLite errors the way the other stores do.
 * Without a `watch` of the file (commit-watch.ts), every answer from memory asks PRAGMA data_version.
 */
export function cachedSqliteSessions(
  db: DatabaseSync,
  call: Call,
  watch: CommitWatch = unwatched(),
  capacity = SESSION_CACHE_ENTRIES,
): SessionStore & SessionCache {
  const { runSync } = sqliteDriver(db);
  const steps = sessionSteps(SQLITE_DIALECT);
  const select = db.prepare(sqliteSql(SESSION_GET));
  const purgeLog = db.prepare('DELETE FROM session_deletions WHERE at <= ?');
  const dataVersion = db.prepare('PRAGMA data_version');
  const deletionsAfter = db.prepare('SELECT seq, id_hash FROM session_deletions WHERE seq > ? ORDER BY seq');
  const entryAt = db.prepare('SELECT id_hash FROM session_deletions WHERE seq = ?');
  // `last` survives the purge of the log (AUTOINCREMENT keeps it in sqlite_sequence).
  const logBounds = db.prepare(
    "SELECT (SELECT min(seq) FROM session_deletions) AS first, (SELECT seq FROM sqlite_sequence WHERE name = 'session_deletions') AS last",
  );
  dataVersion.setReturnArrays(true);

  // Keyed by the hex of the id's hash; a Map iterates in insertion order, so the first is the oldest.
  const cache = new Map<string, SessionRecord>();
  let version = Number((dataVersion.get() as unknown as unknown[])[0]);
  const bounds = () => {
    const row = logBounds.get() as { first: number | null; last: number | null };
    const last = Number(row.last ?? 0);
    return { first: row.first === null ? last + 1 : Number(row.first), last };
  };
  const hashAt = (seq: number): string | null => {
    const row = entryAt.get(seq);
    return row === undefined ? null : Buffer.from(row['id_hash'] as Uint8Array).toString('hex');
  };
  /**
   * The newest log entry the cache has accounted for, and its id hash (null: not in the log, e.g. an
   * empty log). Its hash is checked again before reading on: a log rewritten under us (issue 22,
   * defect 8: a live `.restore` of an older backup sent the sequence backwards, later deletions were
   * never read and a deleted session was served from memory) shows as an anchor that moved.
   */
  let anchor = (() => {
    const { last } = bounds();
    return { seq: last, hash: hashAt(last) };
  })();

  /** Evicts what the log says was deleted since we last read it; empties the cache if it cannot tell. */
  const readLog = () => {
    const { first, last } = bounds();
    const unexplained =
      // The sequence went backwards: the log is another one (a restored backup).
      last < anchor.seq ||
      // Our anchor is gone or holds another deletion: the log was rewritten, or purged past us.
      (anchor.hash !== null && hashAt(anchor.seq) !== anchor.hash) ||
      // Entries we never saw were already purged from the log: we cannot know what they were.
      first > anchor.seq + 1;
    if (unexplained) {
      cache.clear();
      anchor = { seq: last, hash: hashAt(last) };
      return;
    }
    for (const row of deletionsAfter.all(anchor.seq)) {
      const hash = Buffer.from(row['id_hash'] as Uint8Array).toString('hex');
      cache.delete(hash);
      anchor = { seq: Number(row['seq']), hash };
    }
  };
  /** The watch's epoch when we last caught up (NaN: never). */
  let seenEpoch = Number.NaN;
  /** Before answering from memory: has another connection committed anything since? */
  const syncWithOthers = () => {
    const epoch = watch.epoch();
    if (epoch === seenEpoch) return;
    const current = Number((dataVersion.get() as unknown as unknown[])[0]);
    if (current !== version) {
      // Only once the log is read: if reading it fails (SQLITE_BUSY), the next request must try again
      // rather than trust a cache that may hold sessions deleted meanwhile (issue 12, defect 4).
      readLog();
      version = current;
    }
    seenEpoch = epoch;
  };
  const remember = (key: string, record: SessionRecord) => {
    cache.set(key, record);
    if (cache.size > capacity) cache.delete(cache.keys().next().value as string);
  };

  /** The cached answer after catching up with other processes; undefined on a miss. */
  const cached = (key: string, now: number): SessionRecord | null | undefined => {
    syncWithOthers();
    const record = cache.get(key);
    if (record === undefined) return undefined;
    if (record.expiresAt > now) return record;
    cache.delete(key);
    return null;
  };

  return {
    peek: (key, now) => {
      try {
        return cached(key, now);
      } catch {
        return undefined; // the asynchronous path will report the failure
      }
    },
    create: (s, keep) =>
      call(() => {
        // IMMEDIATE: the write lock is held from the insert to the eviction, so two logins at once
        // in two processes cannot both count 100 and leave 101 (contract §9).
        const ended = runSync(steps.create(s, keep), 'write');
        if (ended > 0) readLog();
        remember(s.idHash.toString('hex'), { username: s.username, expiresAt: s.expiresAt });
        return ended;
      }),
    list: (username, now) => call(() => runSync(steps.list(username, now))),
    touch: (sightings) => call(() => runSync(steps.touch(sightings))),
    get: (idHash, now) =>
      call(() => {
        const known = cached(idHash.toString('hex'), now);
        if (known !== undefined) return known;
        const row = select.get(idHash, now);
        if (row === undefined) return null;
        const record = toSessionRecord(row);
        remember(idHash.toString('hex'), record);
        return record;
      }),
    delete: (idHash) =>
      call(() => {
        cache.delete(idHash.toString('hex'));
        const deleted = runSync(steps.delete(idHash)) > 0;
        readLog();
        return deleted;
      }),
    revokeUser: (username) =>
      call(() => {
        const revoked = runSync(steps.revokeUser(username));
        readLog();
        return revoked;
      }),
    countUser: (username, now) => call(() => runSync(steps.countUser(username, now))),
    purgeExpired: (now) =>
      call(() => {
        const purged = runSync(steps.purgeExpired(now));
        readLog();
        for (const [key, record] of cache) if (record.expiresAt <= now) cache.delete(key);
        purgeLog.run(now - DELETION_LOG_RETENTION_MS);
        return purged;
      }),
    countActive: (now) => call(() => runSync(steps.countActive(now))),
  };
}
