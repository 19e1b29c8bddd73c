// Sessions on SQLite with the process's session memory (freshness/session-memory.ts): the shared
// session SQL (sql/sessions.ts) run synchronously, and what only SQLite has, read here:
// - the deletion log (migrations 3 and 9): every deletion of a live session, and every update that
//   ends one early or moves it to another user, is logged by a trigger in the writing transaction,
//   whoever writes (a worker, the clubhouse command, the sqlite3 shell); AUTOINCREMENT numbers the
//   entries in commit order (SQLite has one writer at a time), and its high-water mark survives the
//   purge of old entries;
// - PRAGMA data_version, which moves when another connection committed: the catch-up reads the log
//   only then. This process's own deletions are read at once, after each deleting write.
// When to catch up at all is the commit watch's (freshness.ts).
import type { DatabaseSync } from 'node:sqlite';
import type { LogPage } from '../freshness/change-log.ts';
import type { AnswerWindow } from '../freshness/gate.ts';
import { rememberingSessions, SessionMemory } from '../freshness/session-memory.ts';
import { sessionSteps, sqlSessionStore } from '../sql/sessions.ts';
import type { SessionMemoryAnswers, SessionStore } from '../types.ts';
import { SQLITE_DIALECT } from './dialect.ts';
import { call, type SqliteDriver } from './driver.ts';

/** How long deletion log entries are kept: a process idle for longer forgets its whole memory. */
const DELETION_LOG_RETENTION_MS = 10 * 60 * 1000;

/** Where the log stands: its newest entry (whose number survives the purge), its oldest kept. */
const BOUNDS = `SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'session_deletions'), 0) AS last,
  (SELECT min(seq) FROM session_deletions) AS first`;
const HASH_AT = 'SELECT id_hash FROM session_deletions WHERE seq = ?';
const ENTRIES = 'SELECT id_hash FROM session_deletions WHERE seq > ? AND seq <= ? ORDER BY seq';
// The newest entry always stays: it is the mark a reader checks its position against.
const PURGE_LOG = `DELETE FROM session_deletions WHERE at <= ?
  AND seq < (SELECT max(seq) FROM session_deletions)`;

const hex = (bytes: unknown) => Buffer.from(bytes as Uint8Array).toString('hex');

/** The SQLite session store with memory, its answers, and its part of a catch-up. */
export function sqliteSessionMemory(
  db: DatabaseSync,
  driver: SqliteDriver,
  window: AnswerWindow,
  capacity: number,
): { readonly store: SessionStore; readonly answers: SessionMemoryAnswers; readonly catchUp: () => void } {
  const steps = sessionSteps(SQLITE_DIALECT);
  const bounds = db.prepare(BOUNDS);
  const hashAt = db.prepare(HASH_AT);
  const entries = db.prepare(ENTRIES);
  const purgeLog = db.prepare(PURGE_LOG);
  const dataVersion = db.prepare('PRAGMA data_version');
  dataVersion.setReturnArrays(true);
  const versionNow = () => Number((dataVersion.get() as unknown as unknown[])[0]);

  const memory = new SessionMemory(window, capacity);
  const reader = memory.log;
  const markAt = (seq: number): string | null => {
    if (seq <= 0) return null;
    const row = hashAt.get(seq);
    return row === undefined ? null : hex(row['id_hash']);
  };
  /** The log after the reader's position. The bounds come first: entries beyond them wait for the next page. */
  const page = (): LogPage<string> => {
    const row = bounds.get()!;
    const last = Number(row['last']);
    const after = reader.seq;
    return {
      epoch: '',
      seq: last,
      first: row['first'] === null ? null : Number(row['first']),
      markAtPosition: markAt(after),
      lastMark: markAt(last),
      entries: after < 0 ? [] : entries.all(after, last).map((entry) => hex(entry['id_hash'])),
    };
  };
  const readLog = () => reader.apply(page());
  let version = versionNow();
  readLog();

  const store = rememberingSessions(
    sqlSessionStore(driver),
    (idHash, now) => driver.run(steps.readAt(idHash, now)),
    memory,
    readLog,
  );
  return {
    store: {
      ...store,
      purgeExpired: async (now) => {
        const purged = await store.purgeExpired(now);
        await call(() => purgeLog.run(now - DELETION_LOG_RETENTION_MS));
        return purged;
      },
    },
    answers: memory,
    catchUp: () => {
      const current = versionNow();
      if (current === version) return;
      // Only once the log is read: if reading it fails (SQLITE_BUSY), the next catch-up tries again
      // rather than trust a memory that may hold sessions deleted meanwhile.
      readLog();
      version = current;
    },
  };
}
