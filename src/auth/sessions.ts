// Session ids, cookies and the session lifecycle (contract §2), and a user's own sessions (§9).
import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type {
  FreshnessGate,
  SessionMemoryAnswers,
  SessionStore,
  SignInMethod,
  StoredSession,
} from '../store/types.ts';
import { LastSeen } from './last-seen.ts';

export const SESSION_COOKIE = 'sessionid';
export const CSRF_COOKIE = 'csrftoken';
export const SESSION_MAX_AGE_SECONDS = 1_209_600;
export const CSRF_MAX_AGE_SECONDS = 31_449_600;

const LOWER_ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';
const MIXED_ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const SESSION_ID_PATTERN = /^[a-z0-9]{32}$/;
/** contract §9: a user keeps at most this many live sessions; a login beyond ends the oldest. */
const MAX_SESSIONS_PER_USER = 100;
/** contract §9: the user agent is kept cut at this many characters. */
const USER_AGENT_MAX_LENGTH = 256;
const HANDLE_PATTERN = /^[0-9a-f]{32}$/;

/** Where a login came from (contract §9): the client address as the audit line has it, and the UA. */
export interface LoginClient {
  readonly ip: string | null;
  readonly userAgent: string | null;
}

/** How a session signed in (contract §12): the method, and the passkey's handle for a passkey. */
export interface SignedInWith {
  readonly method: SignInMethod;
  readonly passkey?: string;
}

/** One session as GET /api/auth/sessions shows it (contract §9, §12: `method`, null when not known). */
export interface SessionView {
  readonly id: string;
  readonly created: string;
  readonly last_seen: string;
  readonly ip: string | null;
  readonly user_agent: string | null;
  readonly method: SignInMethod | null;
  readonly current: boolean;
}

/** contract §9's time form: ISO 8601 in UTC to the second ("2026-11-22T10:00:00Z"). */
function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** The user agent as kept: cut at 256 characters (code points, never half a surrogate pair); '' is unknown. */
export function keptUserAgent(value: string | undefined): string | null {
  if (value === undefined || value === '') return null;
  if (value.length <= USER_AGENT_MAX_LENGTH) return value;
  return Array.from(value).slice(0, USER_AGENT_MAX_LENGTH).join('');
}

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
function isWellFormedSessionId(value: string | undefined): value is string {
  return value !== undefined && SESSION_ID_PATTERN.test(value);
}

/** What the store keeps instead of the id: its SHA-256 (one-shot crypto.hash: no Hash object per call). */
export function hashSessionId(id: string): Buffer {
  return hash('sha256', id, 'buffer');
}

/**
 * The session memory's key of an id: the hex of its hash, computed straight to a string (a Buffer
 * per request costs three times as much, in the hash and in the garbage collector).
 */
function sessionKey(id: string): string {
  return hash('sha256', id, 'hex');
}

/**
 * The service's shared secret: SECRET_KEY when set, else the one kept in the database. It keys the
 * throttle's fingerprints and the session handles, so every instance and the CLI agree on both.
 */
export async function sharedSecret(
  configured: string | null,
  stores: { secretKey(): Promise<Buffer> },
): Promise<Buffer> {
  return configured === null ? stores.secretKey() : Buffer.from(configured);
}

/** What Sessions.fromMemory answers when only the store can tell. */
export const ASK_THE_STORE: unique symbol = Symbol('ask the store');

/** The session lifecycle over a store, with an injectable clock. */
export class Sessions {
  readonly store: SessionStore;
  readonly now: () => number;
  /** The sessions the process keeps in memory (null: none); answering only inside the freshness gate. */
  readonly #memory: SessionMemoryAnswers | null;
  readonly #freshness: FreshnessGate | null;
  readonly #lastSeen: LastSeen;
  /** Keys the public handles (contract §9); the same on every instance that shares the secret. */
  readonly #handleKey: Buffer;

  /**
   * `secret` is the service's shared secret (SECRET_KEY or the database's): handles must be the same
   * in every process and instance. `onError` hears of a failed last_seen write (off any request).
   */
  constructor(
    store: SessionStore,
    now: () => number = Date.now,
    options: {
      readonly secret?: Buffer;
      readonly onError?: (err: unknown) => void;
      /** The sessions kept in memory, and the gate that makes them exact (both, or neither). */
      readonly memory?: SessionMemoryAnswers | null;
      readonly freshness?: FreshnessGate;
    } = {},
  ) {
    this.store = store;
    this.now = now;
    this.#memory = options.memory ?? null;
    this.#freshness = options.freshness ?? null;
    this.#lastSeen = new LastSeen(store, now, options.onError ?? (() => {}));
    this.#handleKey = createHmac('sha256', options.secret ?? randomBytes(32))
      .update('clubhouse session handle')
      .digest();
  }

  /**
   * Starts a session for `username` from `client`, signed in `how`; returns the new id (for the
   * cookie, never a log).
   */
  async start(
    username: string,
    client: LoginClient,
    how: SignedInWith,
  ): Promise<{ id: string; expiresAt: number }> {
    const id = newSessionId();
    const idHash = hashSessionId(id);
    const createdAt = this.now();
    const expiresAt = createdAt + SESSION_MAX_AGE_SECONDS * 1000;
    await this.store.create(
      {
        idHash,
        username,
        createdAt,
        expiresAt,
        clientIp: client.ip,
        userAgent: client.userAgent,
        method: how.method,
        passkey: how.passkey ?? null,
      },
      MAX_SESSIONS_PER_USER,
    );
    this.#lastSeen.started(idHash, createdAt);
    return { id, expiresAt };
  }

  /**
   * The username of a live session, or null (absent, malformed or expired: all the same): from memory
   * after a catch-up when kept there, else from the store.
   */
  async resolve(id: string | undefined): Promise<string | null> {
    if (!isWellFormedSessionId(id)) return null;
    const remembered = await this.#fromMemoryAfterCatchUp(id);
    if (remembered !== ASK_THE_STORE) return remembered;
    const idHash = hashSessionId(id);
    const now = this.now();
    const record = await this.store.get(idHash, now);
    if (record === null) return null;
    this.#lastSeen.note(idHash, now);
    return record.username;
  }

  /** fromMemory after the freshness gate caught the session memory up; ASK_THE_STORE when it failed. */
  async #fromMemoryAfterCatchUp(id: string): Promise<string | null | typeof ASK_THE_STORE> {
    if (this.#memory === null || this.#freshness === null) return ASK_THE_STORE;
    const catchingUp = this.#freshness.catchUp(['sessions']);
    if (catchingUp !== null) {
      try {
        await catchingUp;
      } catch {
        return ASK_THE_STORE; // the store answers, or says it cannot (503)
      }
    }
    return this.#freshness.answerFromMemory(() => this.#remembered(id), ['sessions']);
  }

  /**
   * The answer `resolve` would give, synchronously, without the store: null (nobody) for a missing or
   * malformed id, the username of a session kept in memory (inside FreshnessGate.answerFromMemory);
   * ASK_THE_STORE otherwise.
   */
  fromMemory(id: string | undefined): string | null | typeof ASK_THE_STORE {
    return this.#remembered(id);
  }

  #remembered(id: string | undefined): string | null | typeof ASK_THE_STORE {
    if (!isWellFormedSessionId(id)) return null;
    if (this.#memory === null) return ASK_THE_STORE;
    const key = sessionKey(id);
    const now = this.now();
    const record = this.#memory.answer(key, now);
    if (record === undefined) return ASK_THE_STORE;
    this.#lastSeen.noteKey(key, now);
    return record.username;
  }

  /** Ends a session; true when there was one. */
  async end(id: string | undefined): Promise<boolean> {
    if (!isWellFormedSessionId(id)) return false;
    return this.store.delete(hashSessionId(id));
  }

  /**
   * The public handle of a session: an HMAC of its hash under the service's secret, 32 hex digits.
   * It reveals nothing of the id or its hash, needs no column (sessions from before the upgrade have
   * one too), and is the same in every process sharing the secret.
   */
  handleOf(idHash: Buffer): string {
    return createHmac('sha256', this.#handleKey).update(idHash).digest('hex').slice(0, 32);
  }

  /** `username`'s live sessions, newest first; `currentId` (the caller's cookie) is marked current. */
  async list(username: string, currentId: string | undefined): Promise<SessionView[]> {
    const current = isWellFormedSessionId(currentId) ? hashSessionId(currentId) : null;
    const stored = await this.store.list(username, this.now());
    stored.sort((a, b) => b.createdAt - a.createdAt || Buffer.compare(b.idHash, a.idHash));
    return stored.map((s) => this.#view(s, current));
  }

  #view(s: StoredSession, current: Buffer | null): SessionView {
    // Sessions from before the upgrade, or not seen since login, were last seen when created.
    const seen = Math.max(s.createdAt, s.lastSeen ?? 0, this.#lastSeen.pendingAt(s.idHash) ?? 0);
    return {
      id: this.handleOf(s.idHash),
      created: isoSeconds(s.createdAt),
      last_seen: isoSeconds(seen),
      ip: s.clientIp,
      user_agent: s.userAgent,
      method: s.method,
      current: current?.equals(s.idHash) === true,
    };
  }

  /**
   * Ends the session of `username` whose handle is `handle`: 'ended', 'ended-current' (the caller's
   * own, whose cookie goes too), or 'not-found' for anything that is not one of the user's live
   * sessions (contract §9: another user's handle is as unknown as a made-up one).
   */
  async endByHandle(
    username: string,
    handle: string,
    currentId: string | undefined,
  ): Promise<'ended' | 'ended-current' | 'not-found'> {
    if (!HANDLE_PATTERN.test(handle)) return 'not-found';
    const wanted = Buffer.from(handle, 'hex');
    const stored = await this.store.list(username, this.now());
    const match = stored.find((s) => timingSafeEqual(Buffer.from(this.handleOf(s.idHash), 'hex'), wanted));
    if (match === undefined || !(await this.store.delete(match.idHash))) return 'not-found';
    const current = isWellFormedSessionId(currentId) && hashSessionId(currentId).equals(match.idHash);
    return current ? 'ended-current' : 'ended';
  }

  /**
   * When the session `id` of `username` signed in (ms), or null when it is not one of the user's live
   * sessions: the recent sign-in rule of sensitive changes (contract §12) reads it from the store.
   */
  async signedInAt(username: string, id: string | undefined): Promise<number | null> {
    if (!isWellFormedSessionId(id)) return null;
    const idHash = hashSessionId(id);
    const stored = await this.store.list(username, this.now());
    return stored.find((s) => s.idHash.equals(idHash))?.createdAt ?? null;
  }

  /**
   * Ends the sessions of `username` that signed in with the passkey `handle` (contract §12: deleting
   * a passkey ends them); returns how many, and whether the session `currentId` was among them.
   */
  async endSignedInWith(
    username: string,
    handle: string,
    currentId: string | undefined,
  ): Promise<{ readonly ended: number; readonly endedCurrent: boolean }> {
    const current = isWellFormedSessionId(currentId) ? hashSessionId(currentId) : null;
    const stored = await this.store.list(username, this.now());
    let ended = 0;
    let endedCurrent = false;
    for (const s of stored) {
      if (s.passkey !== handle || !(await this.store.delete(s.idHash))) continue;
      ended++;
      if (current?.equals(s.idHash) === true) endedCurrent = true;
    }
    return { ended, endedCurrent };
  }

  /** Ends every session of `username` (logout everywhere); returns how many. */
  endAll(username: string): Promise<number> {
    return this.store.revokeUser(username);
  }

  /** Writes the noted last_seen sightings now (tests; shutdown via close). */
  flushLastSeen(): Promise<void> {
    return this.#lastSeen.flush();
  }

  /** Stops the last_seen timer and writes what is left; call before the stores close. */
  close(): Promise<void> {
    return this.#lastSeen.close();
  }
}
