// Passkeys (contract §12): the two WebAuthn ceremonies and a user's passkeys. @simplewebauthn/server
// verifies what the authenticator signed (CBOR, COSE keys, signatures, flags, origin, RP id hash);
// this module owns the ceremony's state and the rules around it:
//   - each challenge is fresh randomness, kept in the flow store beside the sessions (on every
//     instance: SQL rows or Redis keys) for 5 minutes, and taken exactly once, before anything else
//     is checked, so a failed attempt burns it too;
//   - a registration challenge is bound to the session that asked for it, a sign-in challenge to the
//     browser that asked (a cookie holding a random handle; the row key is the handle's hash);
//   - a sign-in then follows a password login's rules: who may log in, the throttle (per client
//     address: no user is named before the signature is verified), a fresh session (§2), the failure
//     floor of §3, and the passkey's signature counter moving forward (else it is flagged as cloned);
//   - sensitive changes need a session that signed in within the last 10 minutes.
// Nothing a passkey signs, nor a challenge or a credential id, leaves this module for a log.
import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import type { FlowStore, PasskeyStore, StoredPasskey, UserStore } from '../store/types.ts';
import { startSession } from './session-start.ts';
import type { LoginClient, Sessions } from './sessions.ts';
import type { LoginThrottle } from './throttle.ts';
import type { Refusal, WhoMayLogIn } from './who-may-log-in.ts';

/** contract §12: a challenge is valid 5 minutes. */
export const CHALLENGE_LIFETIME_SECONDS = 300;
/** contract §12: creating or deleting a passkey, or changing the switch, needs a sign-in this recent. */
const RECENT_SIGN_IN_MS = 10 * 60 * 1000;
/** contract §12: ES256, EdDSA, RS256 (COSE algorithm ids). */
const ALGORITHMS = [-7, -8, -257];
/** A name as kept: 1 to 100 characters, no control characters. */
const NAME_MAX_LENGTH = 100;
const DEFAULT_NAME = 'Passkey';
const HANDLE_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const PASSKEY_HANDLE_PATTERN = /^[0-9a-f]{32}$/;
/** WebAuthn §5.1: a credential id is at most 1023 bytes. */
const CREDENTIAL_ID_MAX_BYTES = 1023;

/** Why a passkey sign-in failed (contract §12: the metrics' classes). */
export type PasskeyFailure = 'bad_credentials' | 'bad_state' | Refusal['failure'];

export type PasskeySignIn =
  | {
      readonly kind: 'success';
      readonly username: string;
      readonly sessionId: string;
      readonly expiresAt: number;
    }
  | {
      readonly kind: 'failure';
      readonly failure: PasskeyFailure;
      readonly reason: string;
      /** The user, once a known credential named one. */
      readonly username?: string;
    }
  | { readonly kind: 'throttled'; readonly retryAfterSeconds: number };

/** Why a registration was refused; each has its own answer (routes/passkeys.ts). */
export type RegistrationRefusal = 'bad_state' | 'not_verified' | 'taken';

export type Registration =
  | { readonly kind: 'created'; readonly passkey: PasskeyView }
  | { readonly kind: 'refused'; readonly refusal: RegistrationRefusal; readonly reason: string };

/** One passkey as GET /api/auth/passkeys shows it (contract §12). */
export interface PasskeyView {
  readonly id: string;
  readonly name: string;
  readonly created: string;
  readonly last_used: string | null;
  readonly synced: boolean;
  readonly transports: readonly string[];
  /** A signature counter that did not move forward was seen: the passkey may have been copied. */
  readonly cloned: boolean;
}

/** GET /api/auth/passkeys/settings (contract §12). */
export interface PasskeySettingsView {
  readonly password_sign_in: boolean;
  readonly can_change: boolean;
}

export interface PasskeyDeps {
  readonly rpId: string;
  /** The accepted origins: PUBLIC_URL's, then PASSKEY_ORIGINS. */
  readonly origins: readonly string[];
  /** PASSKEYS_RETIRE_PASSWORD. */
  readonly retirePassword: boolean;
  readonly store: PasskeyStore;
  readonly flows: FlowStore;
  /** Read for the password switch's state. */
  readonly users: UserStore;
  readonly sessions: Sessions;
  readonly whoMayLogIn: WhoMayLogIn;
  readonly throttle: LoginThrottle;
  /** contract §3: a refusal is answered no sooner than this after it began. */
  readonly failureDelayMs: number;
}

/** contract §9's time form, as the session list has it. */
function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** The row key of a challenge: domain-separated from every other flow kept in the same store. */
function rowKey(purpose: 'registration' | 'authentication', material: string): Buffer {
  return createHash('sha256').update(`clubhouse passkey ${purpose}\0`).update(material).digest();
}

/** The challenge a client's `clientDataJSON` names (base64url), or null when it is not readable. */
function challengeOf(clientDataJSON: string): string | null {
  try {
    const data = JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8')) as unknown;
    if (typeof data !== 'object' || data === null) return null;
    const challenge = (data as Record<string, unknown>)['challenge'];
    return typeof challenge === 'string' && challenge.length <= 100 ? challenge : null;
  } catch {
    return null;
  }
}

/**
 * A passkey's name as kept: trimmed, 1 to 100 characters, no control characters; `undefined`: the
 * default. Null when it cannot be one.
 */
export function passkeyName(name: unknown): string | null {
  if (name === undefined || name === null) return DEFAULT_NAME;
  if (typeof name !== 'string') return null;
  const trimmed = name.trim();
  if (trimmed === '') return DEFAULT_NAME;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(trimmed)) return null;
  return Array.from(trimmed).length <= NAME_MAX_LENGTH ? trimmed : null;
}

/** The view of a stored passkey. */
function viewOf(p: StoredPasskey): PasskeyView {
  return {
    id: p.handle,
    name: p.name,
    created: isoSeconds(p.createdAt),
    last_used: p.lastUsedAt === null ? null : isoSeconds(p.lastUsedAt),
    synced: p.backedUp,
    transports: p.transports,
    cloned: p.clonedAt !== null,
  };
}

/** Waits at least `ms` by performance.now (a timer can fire a little early on a busy loop). */
async function sleepAtLeast(ms: number): Promise<void> {
  const end = performance.now() + ms;
  for (let left = ms; left > 0; left = Math.ceil(end - performance.now())) await sleep(left);
}

/** The passkeys of one service: the ceremonies, the list, and the password switch. */
export class Passkeys {
  readonly #deps: PasskeyDeps;

  constructor(deps: PasskeyDeps) {
    this.#deps = deps;
  }

  /**
   * Whether the session `sessionId` of `username` signed in within the last 10 minutes (contract §12:
   * a stolen session cookie cannot plant the thief's passkey, nor remove the owner's).
   */
  async recentlySignedIn(username: string, sessionId: string | undefined): Promise<boolean> {
    const at = await this.#deps.sessions.signedInAt(username, sessionId);
    return at !== null && this.#deps.sessions.now() - at <= RECENT_SIGN_IN_MS;
  }

  /**
   * POST /api/auth/passkeys/registration: the creation options for `username`, with a fresh
   * challenge bound to the session `sessionId` and the user's passkeys excluded.
   */
  async registrationOptions(
    username: string,
    sessionId: string,
  ): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const { store, flows, sessions, rpId } = this.#deps;
    const userHandle = await store.userHandle(username, randomBytes(32));
    const existing = await store.list(username);
    const challenge = randomBytes(32);
    const options = await generateRegistrationOptions({
      rpName: 'clubhouse',
      rpID: rpId,
      userName: username,
      userDisplayName: username,
      userID: new Uint8Array(userHandle),
      challenge: new Uint8Array(challenge),
      timeout: CHALLENGE_LIFETIME_SECONDS * 1000,
      attestationType: 'none',
      excludeCredentials: existing.map((p) => ({
        id: p.credentialId.toString('base64url'),
        transports: [...p.transports],
      })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
      supportedAlgorithmIDs: ALGORITHMS,
    });
    const now = sessions.now();
    const bound = { session: createHash('sha256').update(sessionId).digest('hex'), username };
    await flows.put({
      idHash: rowKey('registration', challenge.toString('base64url')),
      data: Buffer.from(JSON.stringify(bound)),
      createdAt: now,
      expiresAt: now + CHALLENGE_LIFETIME_SECONDS * 1000,
    });
    return options;
  }

  /**
   * POST /api/auth/passkeys: verifies `credential` against a challenge issued to this session and
   * stores the passkey as `name`; refused (nothing stored) otherwise.
   */
  async register(
    username: string,
    sessionId: string,
    credential: RegistrationResponseJSON,
    name: string,
  ): Promise<Registration> {
    const { store, flows, sessions } = this.#deps;
    const refused = (refusal: RegistrationRefusal, reason: string): Registration => ({
      kind: 'refused',
      refusal,
      reason,
    });
    const challenge = challengeOf(credential.response.clientDataJSON);
    if (challenge === null) return refused('not_verified', 'clientDataJSON is not readable');
    // Taken before anything else is checked: whatever follows, this challenge is used.
    const taken = await flows.take(rowKey('registration', challenge), sessions.now());
    if (taken === null) return refused('bad_state', 'no such challenge: used, expired or never issued');
    const bound = JSON.parse(taken.toString('utf8')) as { session: string; username: string };
    const session = createHash('sha256').update(sessionId).digest('hex');
    if (bound.session !== session || bound.username !== username)
      return refused('bad_state', 'the challenge was issued to another session');
    let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
    try {
      verified = await verifyRegistrationResponse({
        response: credential,
        expectedChallenge: challenge,
        expectedOrigin: [...this.#deps.origins],
        expectedRPID: this.#deps.rpId,
        expectedType: 'webauthn.create',
        requireUserPresence: true,
        requireUserVerification: true,
        supportedAlgorithmIDs: ALGORITHMS,
      });
    } catch {
      // The library's message may quote what the client sent (its challenge): never passed on.
      return refused('not_verified', 'the attestation did not verify');
    }
    if (!verified.verified) return refused('not_verified', 'the attestation did not verify');
    const info = verified.registrationInfo;
    const credentialId = Buffer.from(info.credential.id, 'base64url');
    if (credentialId.length === 0 || credentialId.length > CREDENTIAL_ID_MAX_BYTES)
      return refused('not_verified', 'credential id of an impossible length');
    const passkey: StoredPasskey = {
      handle: randomBytes(16).toString('hex'),
      username,
      credentialId,
      publicKey: Buffer.from(info.credential.publicKey),
      counter: info.credential.counter,
      transports: (info.credential.transports ?? []).filter((t) => typeof t === 'string').slice(0, 8),
      backedUp: info.credentialBackedUp,
      name,
      createdAt: sessions.now(),
      lastUsedAt: null,
      clonedAt: null,
    };
    const added = await store.add(passkey, this.#deps.retirePassword);
    if (added === 'taken') return refused('taken', 'the credential id is already registered');
    if (added === 'no-user') return refused('bad_state', 'the user is gone');
    return { kind: 'created', passkey: viewOf(passkey) };
  }

  /**
   * POST /api/auth/passkeys/authentication: request options with an empty allowCredentials (the
   * browser offers the person's passkeys), and the handle for the browser's challenge cookie.
   */
  async authenticationOptions(): Promise<{
    readonly options: PublicKeyCredentialRequestOptionsJSON;
    readonly handle: string;
  }> {
    const challenge = randomBytes(32);
    const handle = randomBytes(32).toString('base64url');
    const options = await generateAuthenticationOptions({
      rpID: this.#deps.rpId,
      challenge: new Uint8Array(challenge),
      timeout: CHALLENGE_LIFETIME_SECONDS * 1000,
      userVerification: 'required',
      allowCredentials: [],
    });
    const now = this.#deps.sessions.now();
    await this.#deps.flows.put({
      idHash: rowKey('authentication', handle),
      data: challenge,
      createdAt: now,
      expiresAt: now + CHALLENGE_LIFETIME_SECONDS * 1000,
    });
    return { options, handle };
  }

  /**
   * POST /api/auth/passkeys/login: `handle` is the browser's challenge cookie. A success starts a
   * fresh session (ending `previousSessionId`); a refusal is answered no sooner than the floor.
   */
  async signIn(
    handle: string | undefined,
    credential: AuthenticationResponseJSON,
    client: LoginClient & { readonly ip: string },
    previousSessionId: string | undefined,
  ): Promise<PasskeySignIn> {
    const started = performance.now();
    const { throttle } = this.#deps;
    const admitted = await throttle.admitClient(
      client.ip,
      credential.response.signature,
      Math.max(this.#deps.failureDelayMs, 5000),
    );
    if (admitted.throttled) return { kind: 'throttled', retryAfterSeconds: admitted.retryAfterSeconds };
    let outcome: PasskeySignIn | undefined;
    try {
      outcome = await this.#signIn(handle, credential, client, previousSessionId);
      return outcome;
    } finally {
      const counted =
        outcome?.kind === 'failure' &&
        (outcome.failure === 'bad_credentials' || outcome.failure === 'user_disabled');
      await throttle.settleClient(admitted.guess, counted);
      if (outcome?.kind !== 'success') {
        const remaining = Math.ceil(started + this.#deps.failureDelayMs - performance.now());
        if (remaining > 0) await sleepAtLeast(remaining);
      }
    }
  }

  async #signIn(
    handle: string | undefined,
    credential: AuthenticationResponseJSON,
    client: LoginClient,
    previousSessionId: string | undefined,
  ): Promise<PasskeySignIn> {
    const { store, flows, sessions, whoMayLogIn } = this.#deps;
    const fail = (failure: PasskeyFailure, reason: string, username?: string): PasskeySignIn => ({
      kind: 'failure',
      failure,
      reason,
      ...(username === undefined ? {} : { username }),
    });
    if (handle === undefined || !HANDLE_PATTERN.test(handle)) return fail('bad_state', 'no challenge cookie');
    // Taken before anything else is checked: whatever follows, this challenge is used.
    const stored = await flows.take(rowKey('authentication', handle), sessions.now());
    if (stored === null) return fail('bad_state', 'no such challenge: used, expired or never issued');
    const credentialId = Buffer.from(credential.rawId, 'base64url');
    if (credentialId.length === 0 || credentialId.length > CREDENTIAL_ID_MAX_BYTES)
      return fail('bad_credentials', 'credential id of an impossible length');
    const found = await store.byCredentialId(credentialId);
    if (found === null) return fail('bad_credentials', 'unknown credential');
    const { passkey, userHandle } = found;
    const { username } = passkey;
    // The authenticator says whose passkey it holds: it must be the credential's own user.
    const claimed = credential.response.userHandle;
    if (typeof claimed !== 'string' || !Buffer.from(claimed, 'base64url').equals(userHandle))
      return fail('bad_credentials', "the user handle is not the credential's user", username);
    let verified: Awaited<ReturnType<typeof verifyAuthenticationResponse>>;
    try {
      verified = await verifyAuthenticationResponse({
        response: credential,
        expectedChallenge: stored.toString('base64url'),
        expectedOrigin: [...this.#deps.origins],
        expectedRPID: this.#deps.rpId,
        expectedType: 'webauthn.get',
        requireUserVerification: true,
        // The counter's rule is the store's compare-and-set below (atomic across instances); the
        // library is handed 0 so that it leaves that rule to it.
        credential: {
          id: passkey.credentialId.toString('base64url'),
          publicKey: new Uint8Array(passkey.publicKey),
          counter: 0,
          transports: [...passkey.transports] as never,
        },
      });
    } catch {
      return fail('bad_credentials', 'the assertion did not verify', username);
    }
    if (!verified.verified) return fail('bad_credentials', 'the assertion did not verify', username);
    const refused = await whoMayLogIn.beforeVerifying(username, 'passkey');
    if (refused !== null) return fail(refused.failure, refused.reason, username);
    const { newCounter, credentialBackedUp } = verified.authenticationInfo;
    const used = await store.recordUse(passkey.handle, newCounter, credentialBackedUp, sessions.now());
    if (used === 'cloned')
      return fail(
        'bad_credentials',
        'the signature counter did not move forward: flagged as cloned',
        username,
      );
    if (used === 'gone') return fail('bad_credentials', 'the passkey was deleted', username);
    const session = await startSession(this.#deps, username, client, previousSessionId, {
      method: 'passkey',
      passkey: passkey.handle,
    });
    if (session.kind === 'refused') return fail(session.failure, session.reason, username);
    // A deletion that raced this sign-in either saw the session (and ended it) or is seen here.
    if (!(await store.exists(passkey.handle))) {
      await sessions.end(session.sessionId);
      return fail('bad_credentials', 'the passkey was deleted during sign-in', username);
    }
    return { kind: 'success', username, sessionId: session.sessionId, expiresAt: session.expiresAt };
  }

  /** The passkeys of `username`, newest first. */
  async list(username: string): Promise<PasskeyView[]> {
    return (await this.#deps.store.list(username)).map(viewOf);
  }

  /** Renames the passkey `id` of `username`; false when the user has no such passkey. */
  rename(username: string, id: string, name: string): Promise<boolean> {
    if (!PASSKEY_HANDLE_PATTERN.test(id)) return Promise.resolve(false);
    return this.#deps.store.rename(username, id, name);
  }

  /**
   * Deletes the passkey `id` of `username` and ends the sessions that signed in with it; 'not-found'
   * when the user has no such passkey, 'deleted-current' when the caller's own session was one.
   */
  async remove(
    username: string,
    id: string,
    currentId: string | undefined,
  ): Promise<'deleted' | 'deleted-current' | 'not-found'> {
    if (!PASSKEY_HANDLE_PATTERN.test(id)) return 'not-found';
    if (!(await this.#deps.store.remove(username, id))) return 'not-found';
    const { endedCurrent } = await this.#deps.sessions.endSignedInWith(username, id, currentId);
    return endedCurrent ? 'deleted-current' : 'deleted';
  }

  /** GET /api/auth/passkeys/settings for `username`. */
  async settings(username: string): Promise<PasskeySettingsView> {
    const [user, passkeys] = await Promise.all([
      this.#deps.users.get(username),
      this.#deps.store.list(username),
    ]);
    return {
      password_sign_in: user?.passwordSignIn !== false,
      // contract §12: organisation policy takes the switch away; turning it off needs a passkey.
      can_change: !this.#deps.retirePassword && passkeys.length > 0,
    };
  }

  /**
   * PUT /api/auth/passkeys/settings: 'policy' under PASSKEYS_RETIRE_PASSWORD, 'no-passkey' when
   * turning password sign-in off without a passkey.
   */
  async setPasswordSignIn(
    username: string,
    on: boolean,
  ): Promise<
    | { readonly kind: 'ok'; readonly settings: PasskeySettingsView }
    | { readonly kind: 'policy' | 'no-passkey' }
  > {
    if (this.#deps.retirePassword) return { kind: 'policy' };
    const set = await this.#deps.store.setPasswordSignIn(username, on);
    if (set === 'no-passkey' || set === 'no-user') return { kind: 'no-passkey' };
    return { kind: 'ok', settings: await this.settings(username) };
  }
}
