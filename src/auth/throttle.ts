// Login throttling (contract §3): per username and per client IP, counting only bad credentials (and
// refusals decided without the backend, which must look alike), a repeated wrong password once, and
// never locking the owner out from an address they used before. Guesses in flight count too, in
// the store beside the failures, so the limit holds across every process and instance (issue 12).
// The stores keep and count; the arithmetic of when a lock lifts is here.
import { createHmac, randomUUID } from 'node:crypto';
import type { PendingGuess, ThrottleStore } from '../store/types.ts';

export interface ThrottleSettings {
  readonly userFailures: number;
  readonly ipFailures: number;
  readonly windowSeconds: number;
}

/** How long an address that logged in as a user stays exempt from that user's lock. */
export const KNOWN_CLIENT_TTL_MS = 30 * 24 * 3600 * 1000;

/**
 * Added to the longest verification to bound how long a guess stays in flight: the store calls
 * around it (each bounded by the stores' own timeouts). Only a crashed process ever needs the bound.
 */
export const GUESS_TTL_MARGIN_MS = 30_000;

/** An admitted attempt, in flight until `settle`. */
export interface AdmittedGuess {
  readonly username: string;
  readonly clientIp: string;
  readonly pending: PendingGuess;
}

export type ThrottleVerdict =
  | { readonly throttled: false; readonly guess: AdmittedGuess }
  | { readonly throttled: true; readonly retryAfterSeconds: number };

const userKey = (username: string) => `u:${username}`;
const ipKey = (clientIp: string) => `ip:${clientIp}`;

/**
 * contract §3: milliseconds until a refused guess could be admitted at the earliest, if every guess
 * in flight turns out to be a failure. Such a failure is recorded when its guess settles, at the
 * earliest now, so the ones in flight are the newest failures-to-be, at `now`. The lock lifts when
 * fewer than `limit` failures remain in the window: when the limit-th newest leaves it. If they
 * succeed instead, it lifts sooner (a success clears the count), which nobody can know yet; counting
 * only the failures recorded so far would answer 1 s, and a client retrying then would be refused.
 * With nothing in flight (`pending` 0) it is when a lock of recorded failures lifts. The one place
 * this arithmetic lives: the stores return the facts (issue 13).
 */
export function guessRetryAfterMs(
  facts: { readonly failures: readonly number[]; readonly pending: number },
  limit: number,
  now: number,
  windowMs: number,
): number {
  const newestFirst = [...Array.from({ length: facts.pending }, () => now), ...facts.failures];
  const limiting = newestFirst[limit - 1] ?? now;
  return Math.max(0, limiting + windowMs - now);
}

export class LoginThrottle {
  readonly #store: ThrottleStore;
  readonly #settings: ThrottleSettings;
  readonly #secret: Buffer;
  readonly #now: () => number;

  constructor(
    store: ThrottleStore,
    settings: ThrottleSettings,
    secret: Buffer,
    now: () => number = Date.now,
  ) {
    this.#store = store;
    this.#settings = settings;
    this.#secret = secret;
    this.#now = now;
  }

  get #windowMs(): number {
    return this.#settings.windowSeconds * 1000;
  }

  /** A keyed hash of username and password: repeated identical guesses count once, the password is never kept. */
  fingerprint(username: string, password: string): string {
    return createHmac('sha256', this.#secret)
      .update(username)
      .update('\0')
      .update(password)
      .digest('base64url')
      .slice(0, 32);
  }

  /**
   * Whether an attempt may go ahead now; when it may, it counts as a guess in flight for the
   * username until `settle`, or for at most `maxAttemptMs` (and a margin) if `settle` never comes.
   */
  async admit(
    username: string,
    clientIp: string,
    password: string,
    maxAttemptMs: number,
  ): Promise<ThrottleVerdict> {
    const now = this.#now();
    const { userFailures, ipFailures } = this.#settings;
    // The per-IP limit counts only recorded failures: many people behind one NAT log in at once.
    const ip = await this.#store.recentFailures(ipKey(clientIp), ipFailures, now, this.#windowMs);
    if (ip.length >= ipFailures) {
      // Nothing goes ahead; the answer says when both locks will have lifted, if the user's holds too.
      const user = await this.#store.recentFailures(userKey(username), userFailures, now, this.#windowMs);
      const userLocked =
        user.length >= userFailures && !(await this.#store.isKnownClient(username, clientIp, now));
      const lifts = (failures: number[], limit: number) =>
        guessRetryAfterMs({ failures, pending: 0 }, limit, now, this.#windowMs);
      return this.#throttled(Math.max(lifts(ip, ipFailures), userLocked ? lifts(user, userFailures) : 0));
    }
    const pending: PendingGuess = {
      key: userKey(username),
      fingerprint: this.fingerprint(username, password),
      id: randomUUID(),
      expiresAt: now + maxAttemptMs + GUESS_TTL_MARGIN_MS,
    };
    let admission = await this.#store.beginGuess(pending, userFailures, now, this.#windowMs);
    if (!admission.admitted && (await this.#store.isKnownClient(username, clientIp, now))) {
      // contract §3: an address that logged in as the user is not held back by the user's lock; its
      // guess still counts as in flight, as every other.
      admission = await this.#store.beginGuess(pending, null, now, this.#windowMs);
    }
    if (!admission.admitted) {
      return this.#throttled(guessRetryAfterMs(admission, userFailures, now, this.#windowMs));
    }
    return { throttled: false, guess: { username, clientIp, pending } };
  }

  /**
   * Ends an admitted attempt: a counted failure (bad credentials, or a refusal decided without the
   * backend: login.ts) is recorded, a success clears the username's count.
   */
  async settle(guess: AdmittedGuess, outcome: 'success' | 'counted' | 'other'): Promise<void> {
    const { username, clientIp, pending } = guess;
    try {
      const now = this.#now();
      // Recorded before the guess ends, so that no moment sees it neither in flight nor failed.
      if (outcome === 'counted') {
        await this.#store.recordFailure(
          [userKey(username), ipKey(clientIp)],
          pending.fingerprint,
          now,
          this.#windowMs,
        );
      } else if (outcome === 'success') {
        await Promise.all([
          this.#store.clear(userKey(username)),
          this.#store.rememberClient(username, clientIp, now, KNOWN_CLIENT_TTL_MS),
        ]);
      }
    } finally {
      await this.#store.endGuess(pending);
    }
  }

  /** Drops counters that have left the window, and guesses whose process never ended them. */
  purge(): Promise<void> {
    return this.#store.purgeExpired(this.#now(), this.#windowMs);
  }

  #throttled(waitMs: number): ThrottleVerdict {
    // contract §3: N ≤ the window, and at least 1 (0 would invite an immediate retry).
    const seconds = Math.min(this.#settings.windowSeconds, Math.max(1, Math.ceil(waitMs / 1000)));
    return { throttled: true, retryAfterSeconds: seconds };
  }
}
