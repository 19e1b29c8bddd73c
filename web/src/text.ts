// Everything the client says in words: labels of the API's codes and the messages of its errors.
import { getParser } from 'bowser';
import type { ApiResult, GroupType, MemberStatus, SignInMethod } from './api.ts';
import type { BrowserRefusal } from './passkeys.ts';

/** A request that did not succeed. */
export type Failure = Extract<ApiResult<unknown>, { ok: false }>;

/** contract §4: type 0 is a normal group, 1 a classroom. */
export function groupTypeLabel(type: GroupType | number): string {
  return type === 1 ? 'Classroom' : 'Group';
}

/** contract §3: member_status −1, 0, 1, 2. */
export function memberStatusLabel(status: MemberStatus | number): string {
  switch (status) {
    case 0:
      return 'Request pending';
    case 1:
      return 'Member';
    case 2:
      return 'Administrator';
    default:
      return 'Not a member';
  }
}

/** "45 seconds", "1 minute", "15 minutes": whole minutes, rounded up, from a minute on. */
function waitTime(seconds: number): string {
  if (seconds < 60) return seconds === 1 ? '1 second' : `${seconds} seconds`;
  const minutes = Math.ceil(seconds / 60);
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}

/** True when the failure means the service (or the way to it) is down rather than the request wrong. */
function isUnavailable(failure: Failure): boolean {
  return failure.status === 0 || failure.status === 502 || failure.status === 503 || failure.status === 504;
}

const UNAVAILABLE_TEXT = 'The service is unavailable right now. Please try again in a moment.';

/** The sentence a failed login shows (contract §3, §7). */
export function loginErrorText(failure: Failure): string {
  if (isUnavailable(failure)) return UNAVAILABLE_TEXT;
  switch (failure.status) {
    case 400:
      return 'Enter your username and password.';
    case 403:
      // One 403 body for every cause (contract §3), except the CSRF refusals of §7.
      return failure.detail.startsWith('CSRF')
        ? 'Your browser’s request was refused for safety. Reload the page and try again.'
        : 'Your username or password was not accepted. Check them and try again.';
    case 429:
      return failure.retryAfter === null
        ? 'Too many failed sign-in attempts. Please wait a while before trying again.'
        : `Too many failed sign-in attempts. Please wait ${waitTime(failure.retryAfter)} before trying again.`;
    default:
      return failureText(failure);
  }
}

/** The sentence for a failed request that is not a login: down, or an unexpected status. */
export function failureText(failure: Failure): string {
  return isUnavailable(failure)
    ? UNAVAILABLE_TEXT
    : `Something went wrong (error ${failure.status}). Please try again.`;
}

/**
 * contract §9: "Firefox on Linux" from a session's user agent (bowser: small, kept up to date with
 * new browsers, so the server stores the raw header and the page names it); null → unknown.
 */
export function deviceLabel(userAgent: string | null): string {
  if (userAgent === null) return 'Unknown device';
  const parser = getParser(userAgent);
  const browser = parser.getBrowserName();
  const os = parser.getOSName();
  if (browser === '' && os === '') return 'Unknown device';
  if (os === '') return browser;
  return `${browser === '' ? 'Unknown browser' : browser} on ${os}`;
}

const WHEN = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** A time of the API (ISO 8601) as people read it, in their own locale and time zone. */
export function whenText(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : WHEN.format(date);
}

/** contract §12: the 403 of a sensitive change from a session that signed in more than 10 minutes ago. */
const RECENT_SIGN_IN_DETAIL = 'Sign in again to change your passkeys.';

/** True when the server refused a passkey change for want of a recent sign-in (contract §12). */
export function needsRecentSignIn(failure: Failure): boolean {
  return failure.status === 403 && failure.detail === RECENT_SIGN_IN_DETAIL;
}

/** The sentence a failed passkey sign-in shows: the server's answer (contract §12, as a password login's). */
export function passkeyLoginErrorText(failure: Failure): string {
  if (failure.status === 403 && !failure.detail.startsWith('CSRF'))
    return 'That passkey did not sign you in. It may have been removed from your account: try another passkey, or your password.';
  if (failure.status === 400) return 'Your browser’s answer was not understood. Please try again.';
  return loginErrorText(failure);
}

/** What to say when the browser ended a passkey ceremony (null: nothing, it was replaced on purpose). */
export function passkeyRefusalText(refusal: BrowserRefusal, creating: boolean): string | null {
  switch (refusal) {
    case 'aborted':
      return null;
    case 'cancelled':
      return creating
        ? 'No passkey was created: the request was cancelled or timed out.'
        : 'Signing in with a passkey was cancelled or timed out.';
    case 'already-registered':
      return 'This device already holds a passkey for your account: sign in with that one.';
    case 'wrong-address':
      return `Passkeys work only at this service’s own address. Open it there (not by an IP address or another name) and try again.`;
    case 'unsupported':
      return creating
        ? 'This device cannot make a passkey with a screen lock (fingerprint, face or PIN). Try another device or a security key.'
        : 'This device cannot use passkeys here.';
    default:
      return creating
        ? 'No passkey was created. Please try again.'
        : 'Signing in with a passkey did not work. Please try again.';
  }
}

/** contract §9: how a session signed in, in words. */
export function signInMethodLabel(method: SignInMethod): string {
  switch (method) {
    case 'passkey':
      return 'Passkey';
    case 'oidc':
      return 'Your organisation’s sign-in';
    default:
      return 'Password';
  }
}
