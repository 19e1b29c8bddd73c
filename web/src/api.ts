// The public /api, as a browser sees it: same-origin fetches with the session cookie, and the CSRF
// token of contract §7 sent back on every POST.
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/browser';

export type GroupType = 0 | 1;
export type MemberStatus = -1 | 0 | 1 | 2;

/** An element of GET /api/group/ (contract §3). */
export interface Group {
  readonly id: number;
  readonly name: string;
  readonly description: string;
  readonly short_description: string;
  readonly activities: string;
  readonly type: GroupType;
}

/** GET /api/group/{id}: a group with the caller's membership. */
export interface GroupDetail extends Group {
  readonly member_status: MemberStatus;
}

/** One element of GET /api/auth/sessions (contract §9). */
export interface SessionInfo {
  readonly id: string;
  readonly created: string;
  readonly last_seen: string;
  readonly ip: string | null;
  readonly user_agent: string | null;
  readonly current: boolean;
  /** contract §9 (with §12): how the session signed in; absent from a server before passkeys. */
  readonly method?: SignInMethod;
}

export type SignInMethod = 'password' | 'passkey' | 'oidc';

/** One element of GET /api/auth/passkeys (contract §12); `id` is a handle, not the credential id. */
export interface PasskeyInfo {
  readonly id: string;
  readonly name: string;
  readonly created: string;
  readonly last_used: string | null;
  /** Backed up to a cloud keychain (the authenticator's backup-state flag). */
  readonly synced: boolean;
  readonly transports: readonly string[];
  /**
   * contract §12: a sign-in showed a signature counter that did not move forward (a copied
   * authenticator), and was refused; the passkey is marked so its owner sees it.
   */
  readonly cloned?: boolean;
}

/** GET /api/auth/passkeys/settings (contract §12). */
export interface PasskeySettings {
  readonly password_sign_in: boolean;
  /** False when the organisation decides (PASSKEYS_RETIRE_PASSWORD). */
  readonly can_change: boolean;
}

/** `status` 0 means the request never got an answer (network down, server gone). */
export type ApiResult<T> =
  | { readonly ok: true; readonly status: number; readonly data: T }
  | {
      readonly ok: false;
      readonly status: number;
      readonly detail: string;
      /** Seconds from `Retry-After` (or the 429 detail's "N seconds"), when the server gave one. */
      readonly retryAfter: number | null;
      /** A 400's DRF field errors (`{"field": ["message"]}`), else null. */
      readonly fields: Readonly<Record<string, readonly string[]>> | null;
    };

/** The `csrftoken` cookie, read fresh each time: login rotates it (contract §2). */
function csrfToken(): string | null {
  for (const pair of document.cookie.split(';')) {
    const [name, ...value] = pair.trim().split('=');
    if (name === 'csrftoken') return decodeURIComponent(value.join('='));
  }
  return null;
}

/** One same-origin API call; every method but GET sends the CSRF token (contract §7). */
export async function request<T>(
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<ApiResult<T>> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') {
    // contract §7: a request that carries the header must carry the cookie's value; without a cookie
    // (before the first login) the header is left out rather than sent empty.
    const token = csrfToken();
    if (token !== null) headers['x-csrftoken'] = token;
  }
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      cache: 'no-store',
    });
  } catch {
    return { ok: false, status: 0, detail: '', retryAfter: null, fields: null };
  }
  let data: unknown = null;
  try {
    data = await response.json();
  } catch {
    // A proxy's HTML error page or an empty body: the status alone tells the story.
  }
  if (response.ok) return { ok: true, status: response.status, data: data as T };
  const detail =
    typeof data === 'object' && data !== null && typeof (data as { detail?: unknown }).detail === 'string'
      ? (data as { detail: string }).detail
      : '';
  return {
    ok: false,
    status: response.status,
    detail,
    retryAfter: retryAfterOf(response, detail),
    fields: response.status === 400 ? fieldErrorsOf(data) : null,
  };
}

/** DRF's field errors: an object whose every value is a list of strings. */
function fieldErrorsOf(data: unknown): Record<string, readonly string[]> | null {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return null;
  const fields: Record<string, readonly string[]> = {};
  for (const [name, messages] of Object.entries(data)) {
    if (!Array.isArray(messages) || !messages.every((message) => typeof message === 'string')) return null;
    fields[name] = messages as string[];
  }
  return Object.keys(fields).length === 0 ? null : fields;
}

function retryAfterOf(response: Response, detail: string): number | null {
  const header = response.headers.get('retry-after');
  if (header !== null && /^\d+$/.test(header.trim())) return Number(header.trim());
  const match = /in (\d+) seconds?/.exec(detail);
  return match === null ? null : Number(match[1]);
}

/** GET /api/auth/check: the username when the session is logged in (200), else a failure (403). */
export const checkSession = () => request<string>('GET', '/api/auth/check');

/** POST /api/auth/login with JSON credentials; 200 answers the canonical username. */
export const logIn = (username: string, password: string) =>
  request<string>('POST', '/api/auth/login', { username, password });

/** POST /api/auth/logout; idempotent. */
export const logOut = () => request<string>('POST', '/api/auth/logout');

/** GET /api/group/: the caller's groups. */
export const listGroups = () => request<Group[]>('GET', '/api/group/');

/** GET /api/group/{id}: one group and the caller's member_status. */
export const getGroup = (id: number) => request<GroupDetail>('GET', `/api/group/${id}`);

/** GET /api/auth/sessions: where the caller is signed in, newest first. */
export const listSessions = () => request<SessionInfo[]>('GET', '/api/auth/sessions');

/** DELETE /api/auth/sessions/{id}: 204 once that session has ended. */
export const endSession = (id: string) =>
  request<null>('DELETE', `/api/auth/sessions/${encodeURIComponent(id)}`);

/** POST /api/auth/logout-everywhere: every session of the caller ends, this one too. */
export const logOutEverywhere = () => request<string>('POST', '/api/auth/logout-everywhere');

/** POST /api/auth/passkeys/registration: the options of a new passkey, a challenge for this session. */
export const passkeyRegistrationOptions = () =>
  request<PublicKeyCredentialCreationOptionsJSON>('POST', '/api/auth/passkeys/registration');

/** POST /api/auth/passkeys: the browser's answer to those options, stored as a passkey (201). */
export const createPasskey = (credential: RegistrationResponseJSON, name: string) =>
  request<PasskeyInfo>('POST', '/api/auth/passkeys', { credential, name });

/** GET /api/auth/passkeys: the caller's passkeys, newest first; 404 when passkeys are off here. */
export const listPasskeys = () => request<PasskeyInfo[]>('GET', '/api/auth/passkeys');

/** PATCH /api/auth/passkeys/{id}: a new name. */
export const renamePasskey = (id: string, name: string) =>
  request<PasskeyInfo>('PATCH', `/api/auth/passkeys/${encodeURIComponent(id)}`, { name });

/** DELETE /api/auth/passkeys/{id}: 204; the sessions that signed in with it end (contract §12). */
export const deletePasskey = (id: string) =>
  request<null>('DELETE', `/api/auth/passkeys/${encodeURIComponent(id)}`);

/** GET /api/auth/passkeys/settings: whether the mail password still signs this user in. */
export const passkeySettings = () => request<PasskeySettings>('GET', '/api/auth/passkeys/settings');

/** PUT /api/auth/passkeys/settings: password sign-in on or off (off needs a passkey). */
export const setPasswordSignIn = (on: boolean) =>
  request<PasskeySettings>('PUT', '/api/auth/passkeys/settings', { password_sign_in: on });

/**
 * POST /api/auth/passkeys/authentication (no session needed): the options of a passkey sign-in, its
 * challenge bound to this browser by a short-lived cookie; 404 when passkeys are off here.
 */
export const passkeyAuthenticationOptions = () =>
  request<PublicKeyCredentialRequestOptionsJSON>('POST', '/api/auth/passkeys/authentication');

/** POST /api/auth/passkeys/login: as a password login, 200 the canonical username and the cookies. */
export const passkeyLogIn = (credential: AuthenticationResponseJSON) =>
  request<string>('POST', '/api/auth/passkeys/login', { credential });

/** One identity provider people can sign in at (contract §10). */
interface Provider {
  readonly name: string;
  readonly label: string;
}

/** How the sign-in page can sign people in: the providers' buttons, whether a password form and passkeys. */
export interface SignInMethods {
  readonly providers: readonly Provider[];
  readonly passwordLogin: boolean;
  /** contract §12: passkeys are on here (`X-Passkeys`); off, the client shows none. */
  readonly passkeys: boolean;
}

/**
 * GET /api/auth/providers (contract §10). When it cannot be read, the password form alone, as before
 * identity providers and passkeys: signing in with a password says what is wrong, if anything.
 */
export async function signInMethods(): Promise<SignInMethods> {
  try {
    const response = await fetch('/api/auth/providers', {
      headers: { accept: 'application/json' },
      credentials: 'same-origin',
      cache: 'no-store',
    });
    if (!response.ok) return { providers: [], passwordLogin: true, passkeys: false };
    const providers = (await response.json()) as Provider[];
    return {
      providers,
      passwordLogin: response.headers.get('x-password-login') !== 'false',
      passkeys: response.headers.get('x-passkeys') === 'true',
    };
  } catch {
    return { providers: [], passwordLogin: true, passkeys: false };
  }
}

/** Where a provider's button goes: its start, coming back to `next` (a path of this site). */
export function providerStartUrl(name: string, next: string): string {
  const query = next === '/' ? '' : `?next=${encodeURIComponent(next)}`;
  return `/api/auth/oidc/${encodeURIComponent(name)}/start${query}`;
}
