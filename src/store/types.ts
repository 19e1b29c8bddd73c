// The seams between the domain and its storage. Every implementation (SQLite, PostgreSQL, Redis)
// passes the same contract tests. Methods throw StoreUnavailableError when the store cannot answer.
// The groups' seam is group-types.ts.
import type { DatabaseSync } from 'node:sqlite';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { GroupSyncStore } from './group-sync-types.ts';
import type { GroupStore, JsonBytes } from './group-types.ts';

export interface SessionRecord {
  readonly username: string;
  readonly expiresAt: number;
}

/** How a session signed in (contract §9, §12). */
export type SignInMethod = 'password' | 'oidc' | 'passkey';

export interface NewSession {
  /** SHA-256 of the session id: the id itself is never stored (contract §2). */
  readonly idHash: Buffer;
  readonly username: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** The login request's client address (through TRUST_PROXY) and user agent (contract §9). */
  readonly clientIp: string | null;
  readonly userAgent: string | null;
  /** How it signed in (contract §12); absent: not recorded (as before passkeys). */
  readonly method?: SignInMethod;
  /** The passkey it signed in with (its handle): deleting that passkey ends the session. */
  readonly passkey?: string | null;
}

/** One live session of a user as the store knows it (contract §9); null: not known (older rows). */
export interface StoredSession {
  readonly idHash: Buffer;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly lastSeen: number | null;
  readonly clientIp: string | null;
  readonly userAgent: string | null;
  readonly method: SignInMethod | null;
  readonly passkey: string | null;
}

/** A session seen at `at` (last_seen, written in batches off the request's path). */
export interface SessionSighting {
  readonly idHash: Buffer;
  readonly at: number;
}

export interface SessionStore {
  /**
   * One atomic write: creates the session and, in the same step, ends the user's oldest live
   * sessions beyond `keep` (contract §9: two logins at once never leave more). Returns how many ended.
   */
  create(session: NewSession, keep: number): Promise<number>;
  /** The user's sessions live at `now`, in no particular order. */
  list(username: string, now: number): Promise<StoredSession[]>;
  /** Records sightings: last_seen only ever moves forward, and a deleted session stays deleted. */
  touch(sightings: readonly SessionSighting[]): Promise<void>;
  /** The session, or null when absent or expired at `now`. */
  get(idHash: Buffer, now: number): Promise<SessionRecord | null>;
  /** One atomic delete; true when a session was there. */
  delete(idHash: Buffer): Promise<boolean>;
  /** Deletes every session of a user at once; returns how many. */
  revokeUser(username: string): Promise<number>;
  /** Number of live sessions of a user. */
  countUser(username: string, now: number): Promise<number>;
  purgeExpired(now: number): Promise<number>;
  countActive(now: number): Promise<number>;
}

/** One login attempt in flight, counted as a failure-to-be under its username's key (contract §3). */
export interface PendingGuess {
  readonly key: string;
  readonly fingerprint: string;
  /** Unique per attempt: identical attempts each have their own, and count once by fingerprint. */
  readonly id: string;
  /** After this the guess no longer counts, even if nobody ended it (a crashed process). */
  readonly expiresAt: number;
}

/** The facts behind a guess's admission; throttle.ts does the arithmetic. */
export type GuessAdmission =
  | { readonly admitted: true }
  | {
      readonly admitted: false;
      /** Times of the latest distinct failures in the window, newest first, at most `limit`. */
      readonly failures: readonly number[];
      /** Distinct other fingerprints in flight, not among the failures. */
      readonly pending: number;
    };

export interface ThrottleStore {
  /**
   * Admits the guess, and counts it as in flight, when its key's distinct failures in the window plus
   * the distinct other guesses in flight are fewer than `limit` (`null`: always). Check and add are
   * one atomic step across every process and instance sharing the store.
   */
  beginGuess(
    guess: PendingGuess,
    limit: number | null,
    now: number,
    windowMs: number,
  ): Promise<GuessAdmission>;
  /** The guess is no longer in flight (settle it with recordFailure first, if it failed). */
  endGuess(guess: PendingGuess): Promise<void>;
  /** Counts a failure under each key; the same fingerprint under a key counts once. */
  recordFailure(keys: readonly string[], fingerprint: string, now: number, windowMs: number): Promise<void>;
  /**
   * The times of the key's distinct failures still in the window at `now`, newest first, at most
   * `limit` of them (a fact: throttle.ts decides what they mean).
   */
  recentFailures(key: string, limit: number, now: number, windowMs: number): Promise<number[]>;
  clear(key: string): Promise<void>;
  /** Remembers that `clientIp` logged in as `username` (contract §3: the owner is not locked out). */
  rememberClient(username: string, clientIp: string, now: number, ttlMs: number): Promise<void>;
  isKnownClient(username: string, clientIp: string, now: number): Promise<boolean>;
  /** Drops failures that have left the window, expired known clients and expired guesses. */
  purgeExpired(now: number, windowMs: number): Promise<void>;
}

/**
 * A sign-in at an identity provider in progress (contract §10), kept server-side under the SHA-256 of
 * the opaque handle the browser's state cookie holds. `data` is opaque to the store (the domain
 * seals it with a key only the handle gives), so neither the store nor a copy of it can replay a flow.
 */
interface PendingFlow {
  readonly idHash: Buffer;
  readonly data: Buffer;
  readonly createdAt: number;
  readonly expiresAt: number;
}

export interface FlowStore {
  /** Keeps the flow until `expiresAt` (a handle is fresh randomness: an existing one is a bug). */
  put(flow: PendingFlow): Promise<void>;
  /**
   * Takes the flow and deletes it in one atomic step, so that of two callbacks with the same handle,
   * on any instance, at most one gets it; null when absent, already taken, or expired at `now`.
   */
  take(idHash: Buffer, now: number): Promise<Buffer | null>;
  /** Deletes the flows expired at `now` (abandoned sign-ins); returns how many. */
  purgeExpired(now: number): Promise<number>;
}

export interface UserRecord {
  readonly username: string;
  readonly active: boolean;
  readonly createdAt: number;
  readonly lastLoginAt: number | null;
  /** contract §12: false when the user turned password sign-in off (who-may-log-in.ts refuses it). */
  readonly passwordSignIn: boolean;
}

export type LoginAdmission = 'ok' | 'disabled' | 'unknown';

export interface UserStore {
  get(username: string): Promise<UserRecord | null>;
  /** Creates the user on first login when `allowNew`, records the login time; says whether it may log in. */
  recordLogin(username: string, now: number, allowNew: boolean): Promise<LoginAdmission>;
  /** Sets the active flag; false when there is no such user. */
  setActive(username: string, active: boolean): Promise<boolean>;
  list(): Promise<UserRecord[]>;
}

/** A passkey as stored (contract §12). `handle` is its public id; the credential id never leaves. */
export interface StoredPasskey {
  readonly handle: string;
  readonly username: string;
  readonly credentialId: Buffer;
  /** The COSE public key as the authenticator gave it. */
  readonly publicKey: Buffer;
  readonly counter: number;
  readonly transports: readonly string[];
  readonly backedUp: boolean;
  readonly name: string;
  readonly createdAt: number;
  readonly lastUsedAt: number | null;
  /** When a counter that did not move forward flagged it as cloned; null: never. */
  readonly clonedAt: number | null;
}

/** A passkey found by its credential id at sign-in, with its owner's user handle. */
export interface PasskeyOfCredential {
  readonly passkey: StoredPasskey;
  readonly userHandle: Buffer;
}

/**
 * Passkeys and the password switch (contract §12), in the database. Nothing of it is kept in memory:
 * a deleted passkey or a switch turned off is seen by every instance on its next request.
 */
export interface PasskeyStore {
  /** The user's handle for WebAuthn, made from `candidate` on first use (one per user, never changed). */
  userHandle(username: string, candidate: Buffer): Promise<Buffer>;
  /**
   * Stores a new passkey of an existing user; `retirePassword` (PASSKEYS_RETIRE_PASSWORD) turns the
   * user's password sign-in off in the same step. 'taken': the credential id is already registered.
   */
  add(passkey: StoredPasskey, retirePassword: boolean): Promise<'added' | 'taken' | 'no-user'>;
  /** The user's passkeys, newest first. */
  list(username: string): Promise<StoredPasskey[]>;
  byCredentialId(credentialId: Buffer): Promise<PasskeyOfCredential | null>;
  /** False when the user has no passkey of that handle. */
  rename(username: string, handle: string, name: string): Promise<boolean>;
  /**
   * Deletes the user's passkey; deleting the last one turns password sign-in back on, in the same
   * step (contract §12). False when the user has no passkey of that handle.
   */
  remove(username: string, handle: string): Promise<boolean>;
  /** Deletes every passkey of the user and turns password sign-in back on; returns how many. */
  removeAll(username: string): Promise<number>;
  /**
   * Records a sign-in with the passkey: counter, last use, backed-up flag. One atomic step that
   * succeeds only when the counter moves forward (or stays 0 where the authenticator keeps none);
   * otherwise the passkey is flagged as cloned and 'cloned' answered. 'gone': deleted meanwhile.
   */
  recordUse(
    handle: string,
    counter: number,
    backedUp: boolean,
    now: number,
  ): Promise<'ok' | 'cloned' | 'gone'>;
  /** Whether the passkey (by handle) still exists. */
  exists(handle: string): Promise<boolean>;
  /**
   * Sets the user's password sign-in; turning it off needs at least one passkey, checked in the
   * same step. 'no-passkey': refused for that reason; 'no-user': no such user.
   */
  setPasswordSignIn(username: string, on: boolean): Promise<'ok' | 'no-passkey' | 'no-user'>;
}

/**
 * How a store is reached (docs/operations.md, TLS to the stores): TLS with the server's certificate
 * and name checked, TLS without checks (sslmode=require, asked for by name), no TLS, or a local file
 * (SQLite).
 */
export type TlsState = 'verified' | 'not verified' | 'off' | 'local';

/** A username profile as the store is handed it (auth/username.ts): the canonical form, or why not. */
export type Canonicalizer = (
  username: string,
) => { readonly ok: true; readonly username: string } | { readonly ok: false; readonly reason: string };

/**
 * A stored username that is not canonical (contract §3): `renamed` to `canonical` (or, before the
 * migration, to be), `collides` with the existing `canonical` name (disabled, keeps its name and
 * memberships for an administrator to resolve), or `refused` by the profile (disabled; `reason`).
 */
export interface UsernameFinding {
  readonly username: string;
  readonly canonical: string | null;
  readonly outcome: 'renamed' | 'collides' | 'refused';
  readonly reason: string | null;
}

/** The migration of stored usernames to a profile's canonical form (a capability of the database). */
export interface UsernameMaintenance {
  /** The profile the stored names were last brought to, or null (never). */
  recordedProfile(): Promise<string | null>;
  /**
   * One transaction, safe when several processes run it at once: unless the names were last brought
   * to `profile` (a name that includes the Unicode version), renames, disables and ends sessions as
   * UsernameFinding says, and records `profile`. Returns what it did, or null when already done.
   */
  canonicalize(profile: string, canonical: Canonicalizer): Promise<UsernameFinding[] | null>;
  /** The stored names that are not canonical under `canonical`, as they stand now (config check). */
  nonCanonical(canonical: Canonicalizer): Promise<UsernameFinding[]>;
  /**
   * One transaction: moves every membership of `from` (a name exactly as stored) to `into`, the
   * higher status winning where both have one, ends `from`'s sessions in this database and deletes
   * its row. `missing` names the user that does not exist (then nothing changed).
   */
  merge(from: string, into: string): Promise<UserMerge | { readonly missing: string }>;
}

/** What a merge did with the memberships of the user merged away. */
export interface UserMerge {
  /** Memberships the other user did not have, moved to it. */
  readonly moved: number;
  /** Memberships both had, where the merged user's higher status won. */
  readonly raised: number;
  /** Memberships both had, where the other user's status was already as high. */
  readonly kept: number;
}

/** The answers a process may keep in memory: the sessions, and the group pages. */
export type Memory = 'sessions' | 'groups';

/**
 * The one way an answer from memory stays exact (docs/freshness.md): catch up with every commit made
 * before the request arrived, by any process, then answer from memory at once. SQLite catches up
 * synchronously (one read of the WAL-index header); PostgreSQL and Redis in one round trip shared by
 * every request of an event-loop turn.
 */
export interface FreshnessGate {
  /**
   * Catches the memories named up with every commit made before this call. Null: done, synchronously;
   * answer now. A promise: resolves once a catch-up begun after this call has been applied (answer
   * then), rejects when the store could not be asked (then ask the store, never memory).
   */
  catchUp(memories: readonly Memory[]): Promise<void> | null;
  /** Runs `read` with the memories named answering; outside it they answer nothing. */
  answerFromMemory<T>(read: () => T, memories: readonly Memory[]): T;
}

/** The sessions a process keeps in memory, answering only inside FreshnessGate.answerFromMemory. */
export interface SessionMemoryAnswers {
  /** The session whose id hashes to `key` (hex), live at `now`; undefined: ask the store. */
  answer(key: string, now: number): SessionRecord | undefined;
}

/** The group pages a process keeps in memory, as the JSON the routes send (GroupJson's). */
export interface GroupMemoryAnswers {
  /** GET /api/group/ for `username`; undefined: ask the store. */
  list(username: string): JsonBytes | undefined;
  /** GET /api/group/{id} for `username`; undefined: ask the store. */
  detail(id: number, username: string): JsonBytes | undefined;
}

/** The memories of a process: null where it keeps none (the command line, or not that store). */
interface Memories {
  readonly sessions: SessionMemoryAnswers | null;
  readonly groups: GroupMemoryAnswers | null;
}

/** The engines under the stores, for what only an engine can do (tests, the benchmark, the CLI's SQL). */
type EngineHandles =
  | { readonly database: 'sqlite'; readonly db: DatabaseSync; readonly redis: Redis | null }
  | { readonly database: 'postgres'; readonly pool: pg.Pool; readonly redis: Redis | null };

/** Everything the service keeps, opened from the settings. */
export interface Stores {
  readonly users: UserStore;
  readonly groups: GroupStore;
  /** The group sync's transaction and lease (contract §11); the database's. */
  readonly groupSync: GroupSyncStore;
  readonly sessions: SessionStore;
  readonly throttle: ThrottleStore;
  /**
   * Sign-ins at an identity provider in progress (contract §10), and passkey challenges (§12):
   * beside the sessions, taken once.
   */
  readonly flows: FlowStore;
  /** Passkeys and the password switch (contract §12); the database's. */
  readonly passkeys: PasskeyStore;
  /** Stored usernames and their canonical form (the database's; sessions may be elsewhere). */
  readonly usernames: UsernameMaintenance;
  /** The answers kept in memory, and the gate that keeps them exact. */
  readonly memory: Memories;
  readonly freshness: FreshnessGate;
  readonly engine: EngineHandles;
  /** A secret shared by every instance on this database (keys the throttle's fingerprints). */
  secretKey(): Promise<Buffer>;
  /** Throws when a store cannot answer; names it. */
  ping(): Promise<void>;
  /** The TLS state of the connection to each store, for /readyz. */
  readonly tls: { readonly database: TlsState; readonly sessions: TlsState };
  close(): Promise<void>;
}
