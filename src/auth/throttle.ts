// Login throttling (contract §3): per username and per client IP, counting only bad credentials (and
// refusals decided without the backend, which must look alike), a repeated wrong password once, and
// never locking the owner out from an address they used before. Guesses in flight count toward both
// limits, in the store beside the failures, so a parallel burst lets no more through than the limit
// across every process and instance, for the username's limit and the IP's alike. An IPv6 client is
// keyed by its network (one subscriber holds a /64 or more). The stores keep and count; the
// arithmetic of when a lock lifts is here.
import { createHmac, randomUUID } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import type { PendingGuess, ThrottleStore } from '../store/types.ts';

export interface ThrottleSettings {
  readonly userFailures: number;
  readonly ipFailures: number;
  readonly windowSeconds: number;
  /** An IPv6 client counts as its network of this prefix length (contract §3, default 64). */
  readonly ipv6PrefixLength: number;
}

/** How long an address that logged in as a user stays exempt from that user's lock. */
const KNOWN_CLIENT_TTL_MS = 30 * 24 * 3600 * 1000;

/**
 * Added to the longest verification to bound how long a guess stays in flight: the store calls
 * around it (each bounded by the stores' own timeouts). Only a crashed process ever needs the bound.
 */
const GUESS_TTL_MARGIN_MS = 30_000;

/** An admitted attempt, in flight until `settle`: counted under its username and its client's key. */
export interface AdmittedGuess {
  readonly username: string;
  readonly user: PendingGuess;
  readonly ip: PendingGuess;
}

export type ThrottleVerdict =
  | { readonly throttled: false; readonly guess: AdmittedGuess }
  | { readonly throttled: true; readonly retryAfterSeconds: number };

const userKey = (username: string) => `u:${username}`;

/**
 * The throttle key of a client address (contract §3): an IPv4 address (IPv4-mapped IPv6 included)
 * as it is, an IPv6 address by its network of `prefixLength` bits, since one subscriber is given at
 * least a /64 and could otherwise guess from 2^64 addresses. Anything unparsable is kept verbatim.
 */
export function clientKey(clientIp: string, prefixLength: number): string {
  if (!ipaddr.isValid(clientIp)) return `ip:${clientIp}`;
  const address = ipaddr.process(clientIp);
  if (address.kind() === 'ipv4') return `ip:${address.toString()}`;
  const bytes = address.toByteArray();
  for (let bit = prefixLength; bit < 128; bit++) bytes[bit >> 3]! &= ~(0x80 >> (bit & 7));
  return `ip:${ipaddr.fromByteArray(bytes).toString()}/${prefixLength}`;
}

/**
 * contract §3: milliseconds until a refused guess could be admitted at the earliest. When the failures
 * recorded in the window reach the limit on their own, the lock lifts when the limit-th newest leaves
 * the window. When it takes the guesses in flight to reach it, they are done within `inFlightMs` (the
 * longest an attempt lasts): then they have failed, and a retry learns the window's wait, or some
 * succeeded, and the lock is gone. Either way the honest answer is that deadline, not a whole window
 * (answering 900 s to five parallel guesses that last two would send the owner away for a quarter of
 * an hour for nothing). The one place this arithmetic lives: the stores return the facts.
 */
export function guessRetryAfterMs(
  facts: { readonly failures: readonly number[]; readonly pending: number },
  limit: number,
  now: number,
  windowMs: number,
  inFlightMs: number,
): number {
  const limiting = facts.failures[limit - 1];
  if (limiting !== undefined) return Math.max(0, limiting + windowMs - now);
  return facts.pending > 0 ? Math.min(inFlightMs, windowMs) : 0;
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
   * Whether an attempt may go ahead now; when it may, it counts as a guess in flight for the username
   * and for the client until `settle`, or for at most `maxAttemptMs` (and a margin) if `settle` never
   * comes (a crashed process).
   */
  async admit(
    username: string,
    clientIp: string,
    password: string,
    maxAttemptMs: number,
  ): Promise<ThrottleVerdict> {
    const now = this.#now();
    const { userFailures, ipFailures, ipv6PrefixLength } = this.#settings;
    const windowMs = this.#windowMs;
    const retryAfter = (facts: { failures: readonly number[]; pending: number }, limit: number) =>
      guessRetryAfterMs(facts, limit, now, windowMs, maxAttemptMs);
    const fingerprint = this.fingerprint(username, password);
    const expiresAt = now + maxAttemptMs + GUESS_TTL_MARGIN_MS;
    const id = randomUUID();
    // contract §3: guesses in flight count toward the IP's limit as if they had failed, so 300 parallel
    // guesses over distinct usernames from one address let no more than the limit through.
    const client = clientKey(clientIp, ipv6PrefixLength);
    const ip: PendingGuess = { key: client, fingerprint, id, expiresAt };
    const byIp = await this.#store.beginGuess(ip, ipFailures, now, windowMs);
    if (!byIp.admitted) {
      // Nothing goes ahead; the answer says when both locks will have lifted, if the user's holds too.
      const failures = await this.#store.recentFailures(userKey(username), userFailures, now, windowMs);
      const userLocked =
        failures.length >= userFailures && !(await this.#store.isKnownClient(username, client, now));
      const userWait = userLocked ? retryAfter({ failures, pending: 0 }, userFailures) : 0;
      return this.#throttled(Math.max(retryAfter(byIp, ipFailures), userWait));
    }
    const user: PendingGuess = { ...ip, key: userKey(username) };
    let byUser = await this.#store.beginGuess(user, userFailures, now, windowMs);
    if (!byUser.admitted && (await this.#store.isKnownClient(username, client, now))) {
      // contract §3: an address that logged in as the user is not held back by the user's lock; its
      // guess still counts as in flight, as every other.
      byUser = await this.#store.beginGuess(user, null, now, windowMs);
    }
    if (!byUser.admitted) {
      await this.#store.endGuess(ip);
      return this.#throttled(retryAfter(byUser, userFailures));
    }
    return { throttled: false, guess: { username, user, ip } };
  }

  /**
   * Ends an admitted attempt: a counted failure (bad credentials, or a refusal decided without the
   * backend: login.ts) is recorded, a success clears the username's count.
   */
  async settle(guess: AdmittedGuess, outcome: 'success' | 'counted' | 'other'): Promise<void> {
    const { username, user, ip } = guess;
    try {
      const now = this.#now();
      // Recorded before the guess ends, so that no moment sees it neither in flight nor failed.
      if (outcome === 'counted') {
        await this.#store.recordFailure([user.key, ip.key], user.fingerprint, now, this.#windowMs);
      } else if (outcome === 'success') {
        await Promise.all([
          this.#store.clear(userKey(username)),
          // Known by the same key as the limit's: an IPv6 owner's temporary addresses change daily.
          this.#store.rememberClient(username, ip.key, now, KNOWN_CLIENT_TTL_MS),
        ]);
      }
    } finally {
      await Promise.all([this.#store.endGuess(user), this.#store.endGuess(ip)]);
    }
  }

  /**
   * contract §12: a passkey sign-in names no user until it is verified, so it is throttled per client
   * address alone, as a guess in flight under the IP's key until `settleClient`. `attempt` is what
   * makes attempts identical (the signature): a replayed one counts once.
   */
  async admitClient(
    clientIp: string,
    attempt: string,
    maxAttemptMs: number,
  ): Promise<
    | { readonly throttled: false; readonly guess: PendingGuess }
    | Extract<ThrottleVerdict, { throttled: true }>
  > {
    const now = this.#now();
    const windowMs = this.#windowMs;
    const guess: PendingGuess = {
      key: clientKey(clientIp, this.#settings.ipv6PrefixLength),
      fingerprint: this.fingerprint('\0passkey', attempt),
      id: randomUUID(),
      expiresAt: now + maxAttemptMs + GUESS_TTL_MARGIN_MS,
    };
    const admitted = await this.#store.beginGuess(guess, this.#settings.ipFailures, now, windowMs);
    if (admitted.admitted) return { throttled: false, guess };
    const waitMs = guessRetryAfterMs(admitted, this.#settings.ipFailures, now, windowMs, maxAttemptMs);
    return this.#throttled(waitMs) as Extract<ThrottleVerdict, { throttled: true }>;
  }

  /** Ends a passkey sign-in's guess: a counted failure is recorded under the client's key. */
  async settleClient(guess: PendingGuess, counted: boolean): Promise<void> {
    try {
      if (counted)
        await this.#store.recordFailure([guess.key], guess.fingerprint, this.#now(), this.#windowMs);
    } finally {
      await this.#store.endGuess(guess);
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
