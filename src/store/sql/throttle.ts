// The ThrottleStore of contract §3 on either SQL engine: distinct failures per key in the window,
// the clients that logged in as a user, and the guesses in flight, each operation written once.
// Keys, usernames and client addresses go through dialect.storedText (PostgreSQL: no U+0000).
import type { GuessAdmission, PendingGuess, ThrottleStore } from '../types.ts';
import { type Column, change, type Dialect, type SqlDriver, type Steps, select } from './driver.ts';

const KEY: readonly Column[] = [['key', 'text']];

const ADD_GUESS = 'INSERT INTO throttle_pending (key, id, fingerprint, expires_at) VALUES ($1, $2, $3, $4)';
const RECENT = 'SELECT at FROM throttle_failures WHERE key = $1 AND at > $2 ORDER BY at DESC LIMIT $3';
/**
 * The facts of an admission in one statement, so they come from one snapshot: the key's latest
 * distinct failures in the window (rows with a time), and the distinct fingerprints of the other
 * guesses in flight that are not already among the failures (the row with `pending`).
 */
const GUESS_FACTS = `SELECT at, NULL AS pending FROM (
    SELECT at FROM throttle_failures WHERE key = $1 AND at > $4 ORDER BY at DESC LIMIT $5) AS recent
  UNION ALL
  SELECT NULL, count(DISTINCT p.fingerprint) FROM throttle_pending p
    WHERE p.key = $1 AND p.expires_at > $2 AND p.fingerprint <> $3 AND NOT EXISTS (
      SELECT 1 FROM throttle_failures f WHERE f.key = p.key AND f.fingerprint = p.fingerprint AND f.at > $4)
  ORDER BY at DESC`;

/** The throttle operations in `dialect`; its SQL is built here, once per store. */
function throttleSteps(dialect: Dialect) {
  const text = dialect.storedText;
  // One statement for all keys; rows are taken in key order, so two failures sharing a key (the
  // same client IP) cannot deadlock. The latest time of a repeated fingerprint is kept.
  const recordFailure = `INSERT INTO throttle_failures (key, fingerprint, at)
    SELECT f.key, $1, $2 FROM ${dialect.rows(3, KEY)} WHERE true ORDER BY f.key
    ON CONFLICT (key, fingerprint) DO UPDATE SET at = ${dialect.greatest}(throttle_failures.at, excluded.at)`;
  return {
    /**
     * Run it in a write transaction when there is a limit: the key's lock (PostgreSQL) or the write
     * lock (SQLite), taken before the facts are read, makes check and add one step for every process.
     */
    *beginGuess(
      guess: PendingGuess,
      limit: number | null,
      now: number,
      windowMs: number,
    ): Steps<GuessAdmission> {
      const key = text(guess.key);
      if (limit !== null) {
        if (dialect.lockText !== null)
          yield { sql: dialect.lockText, params: [key], name: 'throttle-guess-lock' };
        const { rows } = yield {
          sql: GUESS_FACTS,
          params: [key, now, guess.fingerprint, now - windowMs, limit],
          name: 'throttle-guess-facts',
        };
        const failures = rows.filter((row) => row['pending'] === null).map((row) => Number(row['at']));
        const pending = Number(rows.find((row) => row['pending'] !== null)?.['pending'] ?? 0);
        if (failures.length + pending >= limit) return { admitted: false, failures, pending };
      }
      yield {
        sql: ADD_GUESS,
        params: [key, guess.id, guess.fingerprint, guess.expiresAt],
        name: 'throttle-guess-add',
      };
      return { admitted: true };
    },
    *recordFailure(keys: readonly string[], fingerprint: string, now: number): Steps<void> {
      if (keys.length === 0) return;
      const sorted = [...new Set(keys.map(text))].sort().map((key) => [key]);
      yield {
        sql: recordFailure,
        params: [fingerprint, now, ...dialect.bulk(KEY, sorted)],
        name: 'throttle-record',
      };
    },
    recentFailures: (key: string, limit: number, now: number, windowMs: number): Steps<number[]> =>
      select({ sql: RECENT, params: [text(key), now - windowMs, limit], name: 'throttle-status' }, (rows) =>
        rows.map((row) => Number(row['at'])),
      ),
    endGuess: (guess: PendingGuess): Steps<number> =>
      change({
        sql: 'DELETE FROM throttle_pending WHERE key = $1 AND id = $2',
        params: [text(guess.key), guess.id],
        name: 'throttle-guess-end',
      }),
    clear: (key: string): Steps<number> =>
      change({
        sql: 'DELETE FROM throttle_failures WHERE key = $1',
        params: [text(key)],
        name: 'throttle-clear',
      }),
    rememberClient: (username: string, clientIp: string, expiresAt: number): Steps<number> =>
      change({
        sql: `INSERT INTO known_clients (username, client_ip, expires_at) VALUES ($1, $2, $3)
          ON CONFLICT (username, client_ip) DO UPDATE SET expires_at = excluded.expires_at`,
        params: [text(username), text(clientIp), expiresAt],
        name: 'known-client-remember',
      }),
    isKnownClient: (username: string, clientIp: string, now: number): Steps<boolean> =>
      select(
        {
          sql: 'SELECT 1 FROM known_clients WHERE username = $1 AND client_ip = $2 AND expires_at > $3',
          params: [text(username), text(clientIp), now],
          name: 'known-client-check',
        },
        (rows) => rows.length > 0,
      ),
    *purgeExpired(now: number, windowMs: number): Steps<void> {
      yield { sql: 'DELETE FROM throttle_failures WHERE at <= $1', params: [now - windowMs] };
      yield { sql: 'DELETE FROM known_clients WHERE expires_at <= $1', params: [now] };
      yield { sql: 'DELETE FROM throttle_pending WHERE expires_at <= $1', params: [now] };
    },
  };
}

/** The ThrottleStore over `driver`. */
export function sqlThrottleStore({ run, dialect }: SqlDriver): ThrottleStore {
  const steps = throttleSteps(dialect);
  const done = async (steps: Steps<unknown>) => {
    await run(steps);
  };
  return {
    beginGuess: (guess, limit, now, windowMs) =>
      run(steps.beginGuess(guess, limit, now, windowMs), limit === null ? undefined : 'write'),
    endGuess: (guess) => done(steps.endGuess(guess)),
    recordFailure: (keys, fingerprint, now) => run(steps.recordFailure(keys, fingerprint, now)),
    recentFailures: (key, limit, now, windowMs) => run(steps.recentFailures(key, limit, now, windowMs)),
    clear: (key) => done(steps.clear(key)),
    rememberClient: (username, clientIp, now, ttlMs) =>
      done(steps.rememberClient(username, clientIp, now + ttlMs)),
    isKnownClient: (username, clientIp, now) => run(steps.isKnownClient(username, clientIp, now)),
    purgeExpired: (now, windowMs) => run(steps.purgeExpired(now, windowMs)),
  };
}
