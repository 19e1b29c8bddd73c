// Session ids, cookies and the session lifecycle (contract §2).
import { hash, randomBytes } from 'node:crypto';
import { hasSessionCache, type SessionCache, type SessionStore } from './store/types.ts';

export const SESSION_COOKIE = 'sessionid';
export const CSRF_COOKIE = 'csrftoken';
export const SESSION_MAX_AGE_SECONDS = 1_209_600;
export const CSRF_MAX_AGE_SECONDS = 31_449_600;

const LOWER_ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';
const MIXED_ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const SESSION_ID_PATTERN = /^[a-z0-9]{32}$/;
const CSRF_TOKEN_PATTERN = /^[A-Za-z0-9]{32}$/;

/** `length` characters drawn uniformly from `alphabet` by a CSPRNG (rejection sampling: no modulo bias). */
function randomString(alphabet: string, length: number): string {
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit && out.length < length) out += alphabet[byte % alphabet.length];
    }
  }
  return out;
}

/** A new session id: 32 of [a-z0-9], about 165 bits. */
export function newSessionId(): string {
  return randomString(LOWER_ALNUM, 32);
}

/** A new CSRF token: 32 of [A-Za-z0-9] (Django 4+ form). */
export function newCsrfToken(): string {
  return randomString(MIXED_ALNUM, 32);
}

/** True when a cookie value could be a session id at all; anything else never reaches the store. */
export function isWellFormedSessionId(value: string | undefined): value is string {
  return value !== undefined && SESSION_ID_PATTERN.test(value);
}

/** True when a cookie value is shaped like a CSRF token. */
export function isWellFormedCsrfToken(value: string | undefined): value is string {
  return value !== undefined && CSRF_TOKEN_PATTERN.test(value);
}

/** What the store keeps instead of the id: its SHA-256 (one-shot crypto.hash: no Hash object per call). */
export function hashSessionId(id: string): Buffer {
  return hash('sha256', id, 'buffer');
}

/** The session lifecycle over a store, with an injectable clock. */
export class Sessions {
  readonly store: SessionStore;
  readonly now: () => number;
  /** The store's in-memory answers, when it has them (SQLite's cache); null otherwise. */
  readonly #cache: SessionCache | null;

  constructor(store: SessionStore, now: () => number = Date.now) {
    this.store = store;
    this.now = now;
    this.#cache = hasSessionCache(store) ? store : null;
  }

  /** Starts a session for `username`; returns the new id (to go in the cookie, never in a log). */
  async start(username: string): Promise<{ id: string; expiresAt: number }> {
    const id = newSessionId();
    const createdAt = this.now();
    const expiresAt = createdAt + SESSION_MAX_AGE_SECONDS * 1000;
    await this.store.create({ idHash: hashSessionId(id), username, createdAt, expiresAt });
    return { id, expiresAt };
  }

  /** The username of a live session, or null (absent, malformed or expired: all the same). */
  async resolve(id: string | undefined): Promise<string | null> {
    if (!isWellFormedSessionId(id)) return null;
    const record = await this.store.get(hashSessionId(id), this.now());
    return record?.username ?? null;
  }

  /**
   * The answer `resolve` would give, synchronously, when no store round trip is needed: null for a
   * missing or malformed id, the cached answer otherwise; undefined when the store must be asked.
   */
  peek(id: string | undefined): string | null | undefined {
    if (!isWellFormedSessionId(id)) return null;
    if (this.#cache === null) return undefined;
    const record = this.#cache.peek(hashSessionId(id), this.now());
    return record === undefined ? undefined : (record?.username ?? null);
  }

  /** Ends a session; true when there was one. */
  async end(id: string | undefined): Promise<boolean> {
    if (!isWellFormedSessionId(id)) return false;
    return this.store.delete(hashSessionId(id));
  }
}
