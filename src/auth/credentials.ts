// The login body (contract §3): DRF-style field validation, trimming, canonical usernames, and the
// characters that are refused before any IMAP command is sent.
import type { UsernameCase } from '../config/config.ts';
import { USERNAME_MAX_LENGTH } from '../store/limits.ts';

export const PASSWORD_MAX_LENGTH = 1024;

export interface Credentials {
  /** Trimmed, and lower-cased unless USERNAME_CASE=preserve. */
  readonly username: string;
  /** Exactly as sent. */
  readonly password: string;
}

export type CredentialsResult =
  | { readonly kind: 'ok'; readonly credentials: Credentials }
  | { readonly kind: 'not_a_dictionary' }
  | { readonly kind: 'invalid'; readonly fields: Record<string, string[]> };

const codePoints = (value: string): number => {
  let n = 0;
  for (const _ of value) n++;
  return n;
};

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
  if (codePoints(value) > maxLength)
    return { error: `Ensure this field has no more than ${maxLength} characters.` };
  return { value };
}

/** The canonical form of a trimmed username (contract §3). */
export function canonicalUsername(username: string, usernameCase: UsernameCase): string {
  return usernameCase === 'lower' ? username.toLowerCase() : username;
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
  const canonical = canonicalUsername(username.value, usernameCase);
  // Lower-casing can lengthen a string ('İ' → 'i̇'): the stored form must fit too.
  if (codePoints(canonical) > USERNAME_MAX_LENGTH) {
    return {
      kind: 'invalid',
      fields: { username: [`Ensure this field has no more than ${USERNAME_MAX_LENGTH} characters.`] },
    };
  }
  return { kind: 'ok', credentials: { username: canonical, password: password.value } };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f]/;
const WHITE_SPACE = /\s/u;

/**
 * True when the credentials cannot be sent to IMAP safely (contract §3): white space or a control
 * character in the username, a control character in the password. Such a login fails with 403.
 */
export function hasForbiddenCharacters(credentials: Credentials): boolean {
  return (
    WHITE_SPACE.test(credentials.username) ||
    CONTROL.test(credentials.username) ||
    CONTROL.test(credentials.password)
  );
}
