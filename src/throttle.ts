// Login throttling (contract §3): per username and per client IP, counting only bad credentials (and
// refusals decided without the backend, which must look alike), a repeated wrong password once, and never locking the owner out from an address they used before.
import { createHmac } from 'node:crypto';
import type { ThrottleStore } from './store/types.ts';

export interface ThrottleSettings {
  readonly userFailures: number;
  readonly ipFailures: number;
  readonly windowSeconds: number;
}

/** How long an address that logged in as a user stays exempt from that user's lock. */
export const KNOWN_CLIENT_TTL_MS = 30 * 24 * 3600 * 1000;

export type ThrottleVerdict =
  | { readonly throttled: false }
  | { readonly throttled: true; readonly retryAfterSeconds: number };

const userKey = (username: string) => `u:${username}`;
const ipKey = (clientIp: string) => `ip:${clientIp}`;

export class LoginThrottle {
  readonly #store: ThrottleStore;
  readonly #settings: ThrottleSettings;
  readonly #secret: Buffer;
  readonly #now: () => number;
  // Distinct guesses under way in this process, per username: counted as failures-to-be so that a
  // burst of parallel guesses for one account cannot all slip past the check before the first is
  // recorded. Identical attempts share one IMAP login and count once; the per-IP limit counts only
  // recorded failures, so many people behind one NAT can log in at the same moment.
  readonly #pending = new Map<string, Map<string, number>>();

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

  /** Whether an attempt may go ahead now; when it may, it is counted as pending until `settle` is called. */
  async admit(username: string, clientIp: string, password: string): Promise<ThrottleVerdict> {
    const now = this.#now();
    const [user, ip] = await Promise.all([
      this.#store.status(userKey(username), this.#settings.userFailures, now, this.#windowMs),
      this.#store.status(ipKey(clientIp), this.#settings.ipFailures, now, this.#windowMs),
    ]);
    const fingerprint = this.fingerprint(username, password);
    const pending = this.#pending.get(username);
    const otherGuesses = pending === undefined ? 0 : pending.size - (pending.has(fingerprint) ? 1 : 0);
    const userCount = user.count + otherGuesses;
    let waitMs = -1;
    if (ip.count >= this.#settings.ipFailures) waitMs = Math.max(waitMs, ip.retryAfterMs);
    if (
      userCount >= this.#settings.userFailures &&
      !(await this.#store.isKnownClient(username, clientIp, now))
    ) {
      waitMs = Math.max(waitMs, user.retryAfterMs);
    }
    if (waitMs >= 0) {
      const seconds = Math.min(this.#settings.windowSeconds, Math.max(1, Math.ceil(waitMs / 1000)));
      return { throttled: true, retryAfterSeconds: seconds };
    }
    this.#adjust(username, fingerprint, 1);
    return { throttled: false };
  }

  /**
   * Ends an admitted attempt: a counted failure (bad credentials, or a refusal decided without the
   * backend: auth.ts) is recorded, a success clears the username's count.
   */
  async settle(
    username: string,
    clientIp: string,
    password: string,
    outcome: 'success' | 'counted' | 'other',
  ): Promise<void> {
    // One HMAC for both uses below.
    const fingerprint = this.fingerprint(username, password);
    try {
      const now = this.#now();
      if (outcome === 'counted') {
        await this.#store.recordFailure(
          [userKey(username), ipKey(clientIp)],
          fingerprint,
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
      this.#adjust(username, fingerprint, -1);
    }
  }

  /** Drops counters that have left the window. */
  purge(): Promise<void> {
    return this.#store.purgeExpired(this.#now(), this.#windowMs);
  }

  #adjust(username: string, fingerprint: string, delta: number): void {
    const guesses = this.#pending.get(username) ?? new Map<string, number>();
    const next = (guesses.get(fingerprint) ?? 0) + delta;
    if (next <= 0) guesses.delete(fingerprint);
    else guesses.set(fingerprint, next);
    if (guesses.size === 0) this.#pending.delete(username);
    else this.#pending.set(username, guesses);
  }
}
