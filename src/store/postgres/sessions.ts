// Sessions on PostgreSQL with the process's session memory (freshness/session-memory.ts), for any
// number of instances and the CLI. What only PostgreSQL has, read here:
// - the deletion log (migrations 8 and 9): every statement deleting sessions, or updating them so
//   that one ends early or moves to another user, logs their hashes under the next seq of
//   session_log_head, by a trigger in the writing transaction. The head row's lock orders the seqs as
//   the transactions commit, so a snapshot that sees seq n sees every entry up to n. TRUNCATE moves
//   the head's epoch instead.
// - a catch-up reads a page of it in the statement every memory on the database shares
//   (catch-up.ts).
import type pg from 'pg';
import type { LogPage } from '../freshness/change-log.ts';
import type { AnswerWindow } from '../freshness/gate.ts';
import { rememberingSessions, SessionMemory } from '../freshness/session-memory.ts';
import type { SqlDriver } from '../sql/driver.ts';
import { sessionSteps, sqlSessionStore } from '../sql/sessions.ts';
import type { SessionMemoryAnswers, SessionStore } from '../types.ts';
import type { PostgresCatchUp } from './catch-up.ts';
import { POSTGRES_DIALECT } from './dialect.ts';
import { query } from './driver.ts';

/** How long log entries are kept: an instance idle for longer empties its memory at its next catch-up. */
const DELETION_LOG_RETENTION_MS = 10 * 60 * 1000;

/** The deletion log's head: its seq and epoch, and the mark at $n (catch-up.ts). */
const headColumns = (n: number) => `(SELECT seq FROM session_log_head) AS log_seq,
    (SELECT epoch::text FROM session_log_head) AS log_epoch,
    (SELECT id_hash FROM session_deletions WHERE seq = $${n} ORDER BY id_hash LIMIT 1) AS log_mark_at`;
/**
 * The page after $n (no hashes when $n < 0), in the catch-up's snapshot: the head, the oldest entry
 * kept, the marks (one hash of an entry: the least) at $n and at the head, and the hashes after $n.
 */
const pageColumns = (n: number) => `${headColumns(n)},
    (SELECT min(seq) FROM session_deletions) AS log_first,
    (SELECT d.id_hash FROM session_deletions d WHERE d.seq = (SELECT seq FROM session_log_head)
      ORDER BY d.id_hash LIMIT 1) AS log_last_mark,
    (SELECT coalesce(array_agg(d.id_hash ORDER BY d.seq), '{}') FROM session_deletions d
      WHERE $${n}::bigint >= 0 AND d.seq > $${n}) AS log_hashes`;
/**
 * Drops the entries older than the retention (a prefix of the log: whole seqs only), but never the
 * newest: it is the mark a reader checks its position against.
 */
const PURGE_LOG = `DELETE FROM session_deletions WHERE seq <= (SELECT max(seq) FROM session_deletions
  WHERE at <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1)
  AND seq < (SELECT seq FROM session_log_head)`;

const hexOrNull = (value: unknown) => (value === null ? null : (value as Buffer).toString('hex'));

/** The PostgreSQL session store with memory, caught up by `catchUp`'s statement. */
export function postgresSessionMemory(
  pool: pg.Pool,
  driver: SqlDriver,
  catchUp: PostgresCatchUp,
  window: AnswerWindow,
  capacity: number,
): { readonly store: SessionStore; readonly answers: SessionMemoryAnswers } {
  const steps = sessionSteps(POSTGRES_DIALECT);
  const memory = new SessionMemory(window, capacity);
  const reader = memory.log;
  catchUp.add({
    head: headColumns,
    page: pageColumns,
    position: () => reader.seq,
    newest: 'log_seq',
    apply: (row, whole, asked) => {
      const markAt = hexOrNull(row['log_mark_at']);
      const page: LogPage<string> = whole
        ? {
            epoch: String(row['log_epoch']),
            seq: Number(row['log_seq']),
            first: row['log_first'] === null ? null : Number(row['log_first']),
            markAtPosition: markAt,
            lastMark: hexOrNull(row['log_last_mark']),
            entries: (row['log_hashes'] as Buffer[]).map((hash) => hash.toString('hex')),
          }
        : // The seq where the reader stands: no entry after it, and the newest is the one at it (a
          // new epoch, a TRUNCATE, still empties memory: change-log.ts).
          {
            epoch: String(row['log_epoch']),
            seq: asked,
            first: null,
            markAtPosition: markAt,
            lastMark: markAt,
            entries: [],
            after: asked,
          };
      reader.apply(page);
    },
  });
  const store = rememberingSessions(
    sqlSessionStore(driver),
    (idHash, now) => driver.run(steps.readAt(idHash, now)),
    memory,
  );
  return {
    store: {
      ...store,
      purgeExpired: async (now) => {
        const purged = await store.purgeExpired(now);
        await query(pool, PURGE_LOG, [DELETION_LOG_RETENTION_MS]);
        return purged;
      },
    },
    answers: memory,
  };
}
