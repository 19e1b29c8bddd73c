// Everything the client says in words: labels of the API's codes and the messages of its errors.
import { getParser } from 'bowser';
import type { ApiResult, GroupType, MemberStatus } from './api.ts';

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
