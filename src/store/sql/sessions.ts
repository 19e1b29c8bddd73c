// The SessionStore of contract §2/§9 on either SQL engine: each operation written once, as steps,
// and the read that a process's session memory fills from (the session with the deletion log's
// position in one snapshot: freshness/session-memory.ts).
// Times are milliseconds since the epoch (BIGINT: strings from pg, hence rows.ts's Number()).
import type { PositionedSession } from '../freshness/session-memory.ts';
import type { NewSession, SessionRecord, SessionSighting, SessionStore, StoredSession } from '../types.ts';
import { type Column, change, type Dialect, type SqlDriver, type Steps, select } from './driver.ts';
import { SESSION_COLUMNS, toSessionRecord, toStoredSession } from './rows.ts';

const SIGHTING: readonly Column[] = [
  ['id_hash', 'bytea'],
  ['at', 'bigint'],
];

const count = (rows: Record<string, unknown>[]) => Number(rows[0]?.['n'] ?? 0);

/** The check's statement (contract §2: a session is live until expires_at). */
const SESSION_GET = 'SELECT username, expires_at FROM sessions WHERE id_hash = $1 AND expires_at > $2';

/** The latest sighting of each session: a statement must not update one row twice (PostgreSQL). */
function latest(sightings: readonly SessionSighting[]): (readonly [Buffer, number])[] {
  const byId = new Map<string, readonly [Buffer, number]>();
  for (const { idHash, at } of sightings) {
    const key = idHash.toString('hex');
    const seen = byId.get(key);
    if (seen === undefined || seen[1] < at) byId.set(key, [idHash, at]);
  }
  return [...byId.values()];
}

/**
 * The session operations in `dialect`. Its SQL is built here, once per store: the request path
 * builds no statement text.
 */
export function sessionSteps(dialect: Dialect) {
  // contract §9: the user's row lock serialises that user's logins, so two at once cannot both count
  // 100 and leave 101 (the user row exists: the foreign key). SQLite's write lock, taken by the
  // transaction's BEGIN IMMEDIATE, does the same for every process on the file.
  const lockUser =
    dialect.forUpdate === '' ? null : `SELECT 1 FROM users WHERE username = $1${dialect.forUpdate}`;
  // contract §9: the user's live sessions beyond `keep`, oldest first out; the new one always stays.
  const evict = `DELETE FROM sessions WHERE id_hash IN (
    SELECT id_hash FROM sessions WHERE username = $1 AND expires_at > $2 AND id_hash <> $3
    ORDER BY created_at DESC, id_hash DESC ${dialect.limitAll} OFFSET $4)`;
  // One statement for the whole batch; an id deleted meanwhile matches nothing.
  const readAt = `SELECT p.log_epoch, p.log_seq, s.username, s.expires_at
    FROM (${dialect.sessionLogPosition}) p LEFT JOIN sessions s ON s.id_hash = $1 AND s.expires_at > $2`;
  const touch = `UPDATE sessions SET last_seen = f.at FROM ${dialect.rows(1, SIGHTING)}
    WHERE sessions.id_hash = f.id_hash AND coalesce(sessions.last_seen, 0) < f.at`;
  return {
    /** Run it in a write transaction: the eviction counts what the insert added. */
    *create(s: NewSession, keep: number): Steps<number> {
      if (lockUser !== null) yield { sql: lockUser, params: [s.username], name: 'session-lock-user' };
      yield {
        sql: 'INSERT INTO sessions (id_hash, username, created_at, expires_at, client_ip, user_agent, sign_in_method, passkey) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
        params: [
          s.idHash,
          s.username,
          s.createdAt,
          s.expiresAt,
          s.clientIp,
          s.userAgent,
          s.method ?? null,
          s.passkey ?? null,
        ],
        name: 'session-create',
      };
      const evicted = yield {
        sql: evict,
        params: [s.username, s.createdAt, s.idHash, Math.max(0, keep - 1)],
        name: 'session-evict',
      };
      return evicted.changes;
    },
    list: (username: string, now: number): Steps<StoredSession[]> =>
      select(
        {
          sql: `SELECT ${SESSION_COLUMNS} FROM sessions WHERE username = $1 AND expires_at > $2`,
          params: [username, now],
          name: 'session-list',
        },
        (rows) => rows.map(toStoredSession),
      ),
    /** last_seen only moves forward, and a deleted session stays deleted (nothing is inserted). */
    *touch(sightings: readonly SessionSighting[]): Steps<void> {
      if (sightings.length === 0) return;
      yield { sql: touch, params: dialect.bulk(SIGHTING, latest(sightings)), name: 'session-touch' };
    },
    get: (idHash: Buffer, now: number): Steps<SessionRecord | null> =>
      select({ sql: SESSION_GET, params: [idHash, now], name: 'session-get' }, (rows) =>
        rows[0] === undefined ? null : toSessionRecord(rows[0]),
      ),
    /** `get`, with the log's position at that snapshot (what the session memory fills from). */
    readAt: (idHash: Buffer, now: number): Steps<PositionedSession> =>
      select({ sql: readAt, params: [idHash, now], name: 'session-read-at' }, (rows) => {
        const row = rows[0]!;
        return {
          record: row['username'] === null ? null : toSessionRecord(row),
          at: { epoch: String(row['log_epoch']), seq: Number(row['log_seq']) },
        };
      }),
    delete: (idHash: Buffer): Steps<number> =>
      change({ sql: 'DELETE FROM sessions WHERE id_hash = $1', params: [idHash], name: 'session-delete' }),
    revokeUser: (username: string): Steps<number> =>
      change({ sql: 'DELETE FROM sessions WHERE username = $1', params: [username], name: 'session-revoke' }),
    countUser: (username: string, now: number): Steps<number> =>
      select(
        {
          sql: 'SELECT count(*) AS n FROM sessions WHERE username = $1 AND expires_at > $2',
          params: [username, now],
          name: 'session-count-user',
        },
        count,
      ),
    purgeExpired: (now: number): Steps<number> =>
      change({ sql: 'DELETE FROM sessions WHERE expires_at <= $1', params: [now] }),
    countActive: (now: number): Steps<number> =>
      select({ sql: 'SELECT count(*) AS n FROM sessions WHERE expires_at > $1', params: [now] }, count),
  };
}

/** The SessionStore over `driver`. */
export function sqlSessionStore({ run, dialect }: SqlDriver): SessionStore {
  const steps = sessionSteps(dialect);
  return {
    create: (session, keep) => run(steps.create(session, keep), 'write'),
    list: (username, now) => run(steps.list(username, now)),
    touch: (sightings) => run(steps.touch(sightings)),
    get: (idHash, now) => run(steps.get(idHash, now)),
    delete: async (idHash) => (await run(steps.delete(idHash))) > 0,
    revokeUser: (username) => run(steps.revokeUser(username)),
    countUser: (username, now) => run(steps.countUser(username, now)),
    purgeExpired: (now) => run(steps.purgeExpired(now)),
    countActive: (now) => run(steps.countActive(now)),
  };
}
