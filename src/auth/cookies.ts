// Cookie headers of contract §2, parsed and written with the `cookie` package.
import type { IncomingHttpHeaders } from 'node:http';
import { parseCookie, stringifySetCookie } from 'cookie';
import { CSRF_COOKIE, CSRF_MAX_AGE_SECONDS, SESSION_COOKIE, SESSION_MAX_AGE_SECONDS } from './sessions.ts';

export interface RequestCookies {
  readonly sessionid: string | undefined;
  readonly csrftoken: string | undefined;
}

const NONE: RequestCookies = { sessionid: undefined, csrftoken: undefined };

/** The two cookies this service reads; a missing or unparsable header reads as none. */
export function readCookies(headers: IncomingHttpHeaders): RequestCookies {
  const header = headers.cookie;
  if (header === undefined || header === '') return NONE;
  const cookies = parseCookie(header);
  return { sessionid: cookies[SESSION_COOKIE], csrftoken: cookies[CSRF_COOKIE] };
}

/** `Set-Cookie` values for a fresh login: csrftoken first, then sessionid (the seed's order). */
export function loginCookies(sessionId: string, csrfToken: string, now: number, secure: boolean): string[] {
  const sessionMaxAge = SESSION_MAX_AGE_SECONDS;
  return [
    stringifySetCookie({
      name: CSRF_COOKIE,
      value: csrfToken,
      maxAge: CSRF_MAX_AGE_SECONDS,
      expires: new Date(now + CSRF_MAX_AGE_SECONDS * 1000),
      path: '/',
      sameSite: 'lax',
      secure,
    }),
    stringifySetCookie({
      name: SESSION_COOKIE,
      value: sessionId,
      maxAge: sessionMaxAge,
      expires: new Date(now + sessionMaxAge * 1000),
      path: '/',
      sameSite: 'lax',
      httpOnly: true,
      secure,
    }),
  ];
}

/** contract §10: the cookie naming a sign-in at an identity provider in progress. */
const FLOW_COOKIE = 'oidc_flow';
/** It goes only to the OIDC endpoints (the callback reads it): no other request carries it. */
const FLOW_COOKIE_PATH = '/api/auth/oidc/';

/** The state cookie's value (an opaque handle), when the request has one. */
export function readFlowCookie(headers: IncomingHttpHeaders): string | undefined {
  const header = headers.cookie;
  if (header === undefined || header === '') return undefined;
  return parseCookie(header)[FLOW_COOKIE];
}

/**
 * contract §10: HttpOnly, SameSite=Lax (the provider's redirect back is a top-level GET, which Lax
 * lets through; a cross-site POST or subrequest carries nothing), Secure as §2, for `maxAgeSeconds`.
 */
export function flowCookie(handle: string, maxAgeSeconds: number, now: number, secure: boolean): string {
  return stringifySetCookie({
    name: FLOW_COOKIE,
    value: handle,
    maxAge: maxAgeSeconds,
    expires: new Date(now + maxAgeSeconds * 1000),
    path: FLOW_COOKIE_PATH,
    sameSite: 'lax',
    httpOnly: true,
    secure,
  });
}

/** The state cookie expired: sent with every callback's answer, whatever its outcome. */
export function clearedFlowCookie(secure: boolean): string {
  return `${FLOW_COOKIE}=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=${FLOW_COOKIE_PATH}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** contract §12: the cookie binding a passkey sign-in's challenge to this browser. */
const PASSKEY_COOKIE = 'passkey_challenge';
/** It goes only to the passkey endpoints (the sign-in reads it). */
const PASSKEY_COOKIE_PATH = '/api/auth/passkeys/';

/** The passkey challenge cookie's value (an opaque handle), when the request has one. */
export function readPasskeyCookie(headers: IncomingHttpHeaders): string | undefined {
  const header = headers.cookie;
  if (header === undefined || header === '') return undefined;
  return parseCookie(header)[PASSKEY_COOKIE];
}

/**
 * contract §12: HttpOnly, SameSite=Strict (the sign-in is a same-site fetch), Secure as §2, for
 * `maxAgeSeconds`. It holds a random handle: the challenge is kept server-side under its hash.
 */
export function passkeyCookie(handle: string, maxAgeSeconds: number, now: number, secure: boolean): string {
  return stringifySetCookie({
    name: PASSKEY_COOKIE,
    value: handle,
    maxAge: maxAgeSeconds,
    expires: new Date(now + maxAgeSeconds * 1000),
    path: PASSKEY_COOKIE_PATH,
    sameSite: 'strict',
    httpOnly: true,
    secure,
  });
}

/** The challenge cookie expired: sent with every passkey sign-in's answer (its challenge is used). */
export function clearedPasskeyCookie(secure: boolean): string {
  return `${PASSKEY_COOKIE}=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=${PASSKEY_COOKIE_PATH}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** The expired session cookie logout answers with (Django's exact form: an empty quoted value). */
export function clearedSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=""; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/; SameSite=Lax${secure ? '; Secure' : ''}`;
}
