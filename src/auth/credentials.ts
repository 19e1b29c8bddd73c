// The login body (contract §3): DRF-style field validation, trimming, canonical usernames
// (username.ts), and the characters that are refused before any IMAP command is sent.

import { USERNAME_MAX_LENGTH } from '../store/limits.ts';
import { codePointLength, storableUsername, type UsernameCase, usernameProfile } from './username.ts';

export const PASSWORD_MAX_LENGTH = 1024;

export interface Credentials {
  /** Trimmed and canonical (contract §3); when `refused`, the trimmed input as sent (for the audit line). */
  readonly username: string;
  /** Exactly as sent. */
  readonly password: string;
  /**
   * Why these credentials are refused without contacting any backend and without being admitted
   * as a guess (contract §3: a control character, white space, a username the profile does not
   * allow), or null.
   */
  readonly refused: string | null;
}

export type CredentialsResult =
  | { readonly kind: 'ok'; readonly credentials: Credentials }
  | { readonly kind: 'not_a_dictionary' }
  | { readonly kind: 'invalid'; readonly fields: Record<string, string[]> };

/** A form body repeats a key as an array; like Django's QueryDict, the last value wins. */
function lastIfList(value: unknown): unknown {
  return Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === 'string')
    ? value[value.length - 1]
    : value;
}

function checkField(
  body: Record<string, unknown>,
  name: string,
  maxLength: number,
  trim: boolean,
  form: boolean,
) {
  if (!Object.hasOwn(body, name) || body[name] === undefined) return { error: 'This field is required.' };
  const raw = form ? lastIfList(body[name]) : body[name];
  if (raw === null) return { error: 'This field may not be null.' };
  if (typeof raw !== 'string') return { error: 'Not a valid string.' };
  const value = trim ? raw.trim() : raw;
  if (value === '') return { error: 'This field may not be blank.' };
  if (codePointLength(value) > maxLength)
    return { error: `Ensure this field has no more than ${maxLength} characters.` };
  return { value };
}

/**
 * Validates a parsed login body (`form`: it came url-encoded, where a repeated key is a list);
 * returns field errors in DRF's shape rather than throwing.
 */
export function parseCredentials(body: unknown, usernameCase: UsernameCase, form = false): CredentialsResult {
  if (body === undefined) body = {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { kind: 'not_a_dictionary' };
  const record = body as Record<string, unknown>;
  const username = checkField(record, 'username', USERNAME_MAX_LENGTH, true, form);
  const password = checkField(record, 'password', PASSWORD_MAX_LENGTH, false, form);
  const fields: Record<string, string[]> = {};
  if (username.error !== undefined) fields['username'] = [username.error];
  if (password.error !== undefined) fields['password'] = [password.error];
  if (username.value === undefined || password.value === undefined) return { kind: 'invalid', fields };
  const credentials = { username: username.value, password: password.value };
  const unsafe = refusalOf(credentials);
  if (unsafe !== null) return { kind: 'ok', credentials: { ...credentials, refused: unsafe } };
  // contract §3, one person one identity: a username the profile refuses is a failed login decided
  // without any backend; the trimmed input stays as the username for the audit line.
  const stored = storableUsername(username.value, usernameCase);
  if (!stored.ok && stored.refused === 'profile') {
    const refused = `username not allowed by the ${usernameProfile(usernameCase)} profile: ${stored.reason}`;
    return { kind: 'ok', credentials: { ...credentials, refused } };
  }
  // The canonical form is too long to store: the field's own error, as DRF's max_length gives it.
  if (!stored.ok) {
    return {
      kind: 'invalid',
      fields: { username: [`Ensure this field has no more than ${USERNAME_MAX_LENGTH} characters.`] },
    };
  }
  return { kind: 'ok', credentials: { ...credentials, username: stored.username, refused: null } };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f]/;
const WHITE_SPACE = /\s/u;

/**
 * Why the credentials cannot be sent to a backend safely (contract §3), or null: white space or a
 * control character in the username, a control character in the password. Such a login fails with 403.
 */
function refusalOf(credentials: { username: string; password: string }): string | null {
  if (WHITE_SPACE.test(credentials.username) || CONTROL.test(credentials.username))
    return 'white space or control character in the username';
  if (CONTROL.test(credentials.password)) return 'control character in the password';
  return null;
}
