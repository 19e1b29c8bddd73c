// Signing in at an identity provider (contract §10), the domain's side: a flow is started with a
// fresh opaque handle for the browser's state cookie, its secrets kept server-side under the handle's
// hash (sealed with a key only the handle gives), and taken exactly once by the callback; a verified
// identity then meets the same user rules and session start as a password login (session-start.ts).
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { FlowSecrets, OidcProvider } from '../backends/oidc/provider.ts';
import type { ProviderFailure } from '../backends/oidc/settings.ts';
import type { FlowStore } from '../store/types.ts';
import { startSession } from './session-start.ts';
import type { LoginClient, Sessions } from './sessions.ts';
import { storableUsername, type UsernameCase } from './username.ts';
import type { WhoMayLogIn } from './who-may-log-in.ts';

/** contract §10: a flow, and the state cookie that names it, last at most 10 minutes. */
export const FLOW_LIFETIME_SECONDS = 600;
/** 32 random bytes, base64url: the state cookie's value. */
const HANDLE_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** contract §10: `next` is a local path; longer than this is not one a page would need. */
const NEXT_MAX_LENGTH = 2048;

export interface OidcSignInDeps {
  readonly providers: readonly OidcProvider[];
  readonly flows: FlowStore;
  readonly whoMayLogIn: WhoMayLogIn;
  readonly sessions: Sessions;
  readonly usernameCase: UsernameCase;
}

/**
 * Why a sign-in at a provider failed (contract §10), for the audit line and the metrics only: what the
 * provider's side reported (backends/oidc/settings.ts), or a disabled user (who-may-log-in.ts; a user
 * not allowed is `not_allowed`, as an identity the provider vouches for but that may not sign in).
 */
export type OidcFailure = ProviderFailure | 'user_disabled';

export type StartOutcome =
  | { readonly kind: 'redirect'; readonly url: string; readonly handle: string }
  | { readonly kind: 'failure'; readonly failure: OidcFailure; readonly reason: string };

export type SignInOutcome =
  | { readonly kind: 'success'; readonly username: string; readonly sessionId: string; readonly next: string }
  | {
      readonly kind: 'failure';
      readonly failure: OidcFailure;
      readonly reason: string;
      /** The canonical username, once the provider has vouched for one. */
      readonly username?: string;
    };

/** What a flow keeps until its callback. */
interface Flow extends FlowSecrets {
  readonly provider: string;
  readonly next: string;
}

/**
 * contract §10: `next` as a path on this origin, or `/`. Refused (so `/`): anything that does not
 * start with one `/` (an absolute URL, `//host`), a backslash anywhere (browsers read `/\host` as
 * `//host`), control characters (browsers drop tabs and newlines: `/\t/host` is `//host`), and
 * anything that would resolve elsewhere. Returned percent-encoded, as a Location header carries it.
 */
export function localNext(next: string | undefined): string {
  if (next === undefined || next.length > NEXT_MAX_LENGTH) return '/';
  if (!next.startsWith('/') || next.startsWith('//') || next.includes('\\')) return '/';
  if (/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(next)) return '/';
  const base = 'https://clubhouse.invalid';
  let url: URL;
  try {
    url = new URL(next, base);
  } catch {
    return '/';
  }
  if (url.origin !== base) return '/';
  const local = `${url.pathname}${url.search}${url.hash}`;
  return local.startsWith('//') ? '/' : local;
}

/** The row key and the sealing key of a handle: two independent derivations of its 256 bits. */
function keysOf(handle: string): { idHash: Buffer; key: Buffer } {
  const material = Buffer.from(handle, 'base64url');
  return {
    idHash: Buffer.from(hkdfSync('sha256', material, '', 'clubhouse oidc flow id', 32)),
    key: Buffer.from(hkdfSync('sha256', material, '', 'clubhouse oidc flow key', 32)),
  };
}

/** AES-256-GCM under the handle's key, bound to its row: 12 bytes of IV, 16 of tag, then the text. */
function seal(flow: Flow, idHash: Buffer, key: Buffer): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(idHash);
  const text = Buffer.concat([cipher.update(JSON.stringify(flow), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), text]);
}

function unseal(data: Buffer, idHash: Buffer, key: Buffer): Flow | null {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, 12)).setAAD(idHash);
    decipher.setAuthTag(data.subarray(12, 28));
    const text = Buffer.concat([decipher.update(data.subarray(28)), decipher.final()]).toString('utf8');
    return JSON.parse(text) as Flow;
  } catch {
    return null;
  }
}

/** The sign-ins at every configured provider. */
export class OidcSignIn {
  readonly #deps: OidcSignInDeps;
  readonly #byName: ReadonlyMap<string, OidcProvider>;

  constructor(deps: OidcSignInDeps) {
    this.#deps = deps;
    this.#byName = new Map(deps.providers.map((provider) => [provider.name, provider]));
  }

  /** contract §10: the providers as the sign-in page lists them. */
  list(): { name: string; label: string }[] {
    return this.#deps.providers.map(({ name, label }) => ({ name, label }));
  }

  has(name: string): boolean {
    return this.#byName.has(name);
  }

  /**
   * Starts a flow at provider `name` (which must exist): the URL to send the browser to, and the
   * handle for its state cookie. `next` is where the browser goes once signed in (localNext).
   */
  async start(name: string, next: string | undefined): Promise<StartOutcome> {
    const provider = this.#provider(name);
    const begun = await provider.begin();
    if (!begun.ok) return { kind: 'failure', failure: begun.failure, reason: begun.reason };
    const handle = randomBytes(32).toString('base64url');
    const { idHash, key } = keysOf(handle);
    const flow: Flow = { ...begun.secrets, provider: name, next: localNext(next) };
    const createdAt = this.#deps.sessions.now();
    await this.#deps.flows.put({
      idHash,
      data: seal(flow, idHash, key),
      createdAt,
      expiresAt: createdAt + FLOW_LIFETIME_SECONDS * 1000,
    });
    return { kind: 'redirect', url: begun.url, handle };
  }

  /**
   * The callback at provider `name` (which must exist): `handle` is the state cookie's value, `query`
   * the callback's query string. The flow is taken (so it can never be used again, whatever follows),
   * the provider verifies the response and the ID token, then the user rules and a fresh session.
   */
  async finish(
    name: string,
    handle: string | undefined,
    query: string,
    client: LoginClient,
    previousSessionId: string | undefined,
  ): Promise<SignInOutcome> {
    const provider = this.#provider(name);
    // contract §10: the state cookie is the defence against login CSRF; without it, nothing is asked.
    if (handle === undefined || !HANDLE_PATTERN.test(handle)) return badState('no state cookie');
    const { idHash, key } = keysOf(handle);
    const sealed = await this.#deps.flows.take(idHash, this.#deps.sessions.now());
    if (sealed === null) return badState('no such flow: used, expired or never started');
    const flow = unseal(sealed, idHash, key);
    if (flow === null) return badState('the flow does not open with this handle');
    if (flow.provider !== name) return badState(`the flow was started at ${flow.provider}`);

    const verified = await provider.finish(query, flow);
    if (!verified.ok) return { kind: 'failure', failure: verified.failure, reason: verified.reason };
    const stored = storableUsername(verified.claim, this.#deps.usernameCase);
    if (!stored.ok && stored.refused === 'profile')
      return { kind: 'failure', failure: 'not_allowed', reason: `username: ${stored.reason}` };
    if (!stored.ok)
      return {
        kind: 'failure',
        failure: 'not_allowed',
        reason: 'username: too long',
        username: stored.username,
      };
    const { username } = stored;

    const started = await startSession(this.#deps, username, client, previousSessionId, {
      method: 'oidc',
    });
    if (started.kind === 'refused') {
      const failure = started.failure === 'user_disabled' ? 'user_disabled' : 'not_allowed';
      return { kind: 'failure', failure, reason: started.reason, username };
    }
    return { kind: 'success', username, sessionId: started.sessionId, next: flow.next };
  }

  #provider(name: string): OidcProvider {
    const provider = this.#byName.get(name);
    if (provider === undefined) throw new Error(`no identity provider named ${name}`);
    return provider;
  }
}

function badState(reason: string): SignInOutcome {
  return { kind: 'failure', failure: 'bad_state', reason };
}
