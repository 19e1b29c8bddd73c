// The PostgreSQL throttle store (contract §3): failures, known clients and guesses in flight, the
// same semantics as sqlite.ts statement for statement. Times are ms in BIGINT (strings from pg).
import type pg from 'pg';
import type { ThrottleStore } from '../types.ts';
import { query, transaction } from './pool.ts';

// The admissions of one key are serialised by a transaction-scoped advisory lock on (this class,
// hashtext(key)). The two-integer lock space is apart from the migrations' one-bigint key; a hash
// collision only makes two keys' admissions wait for each other.
const GUESS_LOCK_CLASS = 4_242_002;

/**
 * PostgreSQL text cannot hold U+0000, but a throttle key may: the username is counted before the
 * login refuses its control characters (contract §3). An injective escape of "%" and NUL keeps
 * such keys apart and storable; every other key is stored as it is.
 */
export function throttleText(value: string): string {
  return value.includes('\0') || value.includes('%')
    ? value.replaceAll('%', '%25').replaceAll('\0', '%00')
    : value;
}

/** The throttle store on `pool`. */
export function postgresThrottleStore(pool: pg.Pool): ThrottleStore {
  return {
    beginGuess: async (guess, limit, now, windowMs) => {
      const row = [throttleText(guess.key), guess.id, guess.fingerprint, guess.expiresAt];
      const add = 'INSERT INTO throttle_pending (key, id, fingerprint, expires_at) VALUES ($1, $2, $3, $4)';
      if (limit === null) {
        await query(pool, add, row, 'throttle-guess-add');
        return { admitted: true };
      }
      return transaction(pool, async (client) => {
        // Taken before the count, in its own statement: under READ COMMITTED the count's snapshot
        // then sees every guess the previous holder of the lock added (check and add are one step).
        await query(
          client,
          'SELECT pg_advisory_xact_lock($1, hashtext($2))',
          [GUESS_LOCK_CLASS, row[0]],
          'throttle-guess-lock',
        );
        // Distinct other fingerprints in flight that are not already counted as failures.
        const { rows } = await query<{ failures: string[]; pending: string }>(
          client,
          `SELECT ARRAY(SELECT at FROM throttle_failures WHERE key = $1 AND at > $4 ORDER BY at DESC LIMIT $5) AS failures,
                        (SELECT count(DISTINCT p.fingerprint) FROM throttle_pending p
                          WHERE p.key = $1 AND p.expires_at > $2 AND p.fingerprint <> $3 AND NOT EXISTS (
                            SELECT 1 FROM throttle_failures f
                            WHERE f.key = p.key AND f.fingerprint = p.fingerprint AND f.at > $4)) AS pending`,
          [row[0], now, guess.fingerprint, now - windowMs, limit],
          'throttle-guess-facts',
        );
        const failures = (rows[0]?.failures ?? []).map(Number);
        const pending = Number(rows[0]?.pending ?? 0);
        if (failures.length + pending >= limit) return { admitted: false, failures, pending };
        await query(client, add, row, 'throttle-guess-add');
        return { admitted: true };
      });
    },
    endGuess: async (guess) => {
      await query(
        pool,
        'DELETE FROM throttle_pending WHERE key = $1 AND id = $2',
        [throttleText(guess.key), guess.id],
        'throttle-guess-end',
      );
    },
    recordFailure: async (keys, fingerprint, now) => {
      if (keys.length === 0) return;
      // One statement for all keys; rows are locked in key order, so two failures sharing a key
      // (the same client IP) cannot deadlock. GREATEST keeps the latest time, as SQLite's max().
      await query(
        pool,
        `INSERT INTO throttle_failures (key, fingerprint, at) SELECT k, $2, $3 FROM unnest($1::text[]) AS k ORDER BY k
         ON CONFLICT (key, fingerprint) DO UPDATE SET at = greatest(throttle_failures.at, excluded.at)`,
        [[...new Set(keys.map(throttleText))].sort(), fingerprint, now],
        'throttle-record',
      );
    },
    recentFailures: async (key, limit, now, windowMs) => {
      const { rows } = await query<{ at: string }>(
        pool,
        'SELECT at FROM throttle_failures WHERE key = $1 AND at > $2 ORDER BY at DESC LIMIT $3',
        [throttleText(key), now - windowMs, limit],
        'throttle-status',
      );
      return rows.map((row) => Number(row.at));
    },
    clear: async (key) => {
      await query(
        pool,
        'DELETE FROM throttle_failures WHERE key = $1',
        [throttleText(key)],
        'throttle-clear',
      );
    },
    rememberClient: async (username, clientIp, now, ttlMs) => {
      await query(
        pool,
        `INSERT INTO known_clients (username, client_ip, expires_at) VALUES ($1, $2, $3)
         ON CONFLICT (username, client_ip) DO UPDATE SET expires_at = excluded.expires_at`,
        [throttleText(username), throttleText(clientIp), now + ttlMs],
        'known-client-remember',
      );
    },
    isKnownClient: async (username, clientIp, now) =>
      (
        await query(
          pool,
          'SELECT 1 FROM known_clients WHERE username = $1 AND client_ip = $2 AND expires_at > $3',
          [throttleText(username), throttleText(clientIp), now],
          'known-client-check',
        )
      ).rows.length > 0,
    purgeExpired: async (now, windowMs) => {
      await query(pool, 'DELETE FROM throttle_failures WHERE at <= $1', [now - windowMs]);
      await query(pool, 'DELETE FROM known_clients WHERE expires_at <= $1', [now]);
      await query(pool, 'DELETE FROM throttle_pending WHERE expires_at <= $1', [now]);
    },
  };
}
