// The parsers of the settings table (settings.ts): each validator states one rule and its message;
// envalid runs them. `row` adds how a setting is presented (the documented default, secrecy in the report).
import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { EnvError, makeValidator } from 'envalid';
import type { UsernameCase } from '../auth/username.ts';
import type { BackendKind } from '../backends/authenticator.ts';

// The literal types of the layers that use the values: the table parses into them.
export type { UsernameCase };
export type BackendKindSetting = BackendKind;
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export type TrustProxy = boolean | number | string[];

/** How `config check` prints a value: as is, a URL with its password masked, or only `***`. */
type Secrecy = 'url' | 'value';

export interface Presentation {
  /** What docs/configuration.md says for the default, and the report for an unset optional setting. */
  readonly unset?: string;
  readonly secret?: Secrecy;
}

export const integer = (min: number, max: number) =>
  makeValidator<number>((raw) => {
    if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      throw new EnvError(`expected a whole number from ${min} to ${max}, got "${raw}"`);
    }
    return Number(raw);
  });

export const boolean = makeValidator<boolean>((input) => {
  const raw = input.toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(raw)) return true;
  if (['false', '0', 'no', 'off'].includes(raw)) return false;
  throw new EnvError(`expected true or false, got "${raw}"`);
});

export const oneOf = <T extends string>(allowed: readonly T[]) =>
  makeValidator<T>((input) => {
    const raw = input.toLowerCase();
    const found = allowed.find((value) => value === raw);
    if (found === undefined) throw new EnvError(`expected one of ${allowed.join(', ')}, got "${raw}"`);
    return found;
  });

export const text = makeValidator<string>((raw) => raw);

export const file = makeValidator<string>((raw) => {
  if (!existsSync(raw)) throw new EnvError(`no such file "${raw}"`);
  return raw;
});

export const matching = (pattern: RegExp, expected: string) =>
  makeValidator<string>((raw) => {
    if (!pattern.test(raw)) throw new EnvError(expected);
    return raw;
  });

/**
 * `text` as a serialized http(s) origin (scheme, host, port; a trailing slash allowed, nothing more),
 * or the EnvError `problem` names.
 */
function httpOrigin(text: string, problem: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new EnvError(problem);
  }
  if (!['http:', 'https:'].includes(url.protocol) || url.origin !== text.replace(/\/$/, '')) {
    throw new EnvError(problem);
  }
  return url.origin;
}

export const origins = makeValidator<string[]>((raw) =>
  raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
    .map((item) => httpOrigin(item, `"${item}" is not an origin like https://example.org`)),
);

/** contract §10: PUBLIC_URL, the origin browsers reach the service at (no path, query or credentials). */
export const publicUrl = makeValidator<string>((raw) =>
  httpOrigin(raw, `"${raw}" is not an origin like https://club.example.org (no path)`),
);

export const trustProxy = makeValidator<TrustProxy>((raw) => {
  if (raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^[0-9]+$/.test(raw)) return Number(raw);
  const entries = raw.split(',').map((item) => item.trim());
  for (const entry of entries) {
    const [address, prefix] = entry.split('/');
    const family = isIP(address ?? '');
    const prefixOk =
      prefix === undefined || (/^[0-9]+$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (family === 0 || !prefixOk) {
      throw new EnvError(`expected false, true, a hop count, or addresses/CIDRs, got "${entry}"`);
    }
  }
  return entries;
});

// An entry of ALLOWED_HOSTS: `*`, a name (a leading dot: and its subdomains), or a bracketed IPv6
// literal; the forms Django's host check can match, since it compares the Host without its port.
const ALLOWED_HOST = /^(\*|\.?[a-z0-9-]+(\.[a-z0-9-]+)*\.?|\[[a-f0-9]*:[a-f0-9.:]+\])$/;

export const allowedHosts = makeValidator<string[]>((raw) => {
  const entries = raw
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item !== '');
  if (entries.length === 0) throw new EnvError('lists no host name');
  for (const entry of entries) {
    if (!ALLOWED_HOST.test(entry)) {
      throw new EnvError(
        `"${entry}" is not a host name like club.example.org, .example.org, [::1] or * (no scheme, no port)`,
      );
    }
  }
  // A trailing dot is stripped from the Host before comparing (Django), so from the entries too.
  return entries.map((entry) => (entry.length > 1 && entry.endsWith('.') ? entry.slice(0, -1) : entry));
});

export const backendKinds = makeValidator<BackendKindSetting[]>((raw) => {
  const kinds = raw.split(',').map((item) => item.trim().toLowerCase());
  for (const kind of kinds) {
    if (kind !== 'imap' && kind !== 'ldap')
      throw new EnvError(`expected imap and/or ldap, comma-separated, got "${kind}"`);
  }
  if (new Set(kinds).size !== kinds.length) throw new EnvError(`"${raw}" lists a backend twice`);
  return kinds as BackendKindSetting[];
});

export const ldapUrl = matching(
  /^ldaps?:\/\/[^/?#@]+\/?$/,
  'expected ldaps://HOST[:636] or ldap://HOST[:389]',
);

export const secretKey = makeValidator<string>((raw) => {
  if (raw.length < 32) throw new EnvError('expected at least 32 characters');
  return raw;
});

/** A row of the table: an envalid spec plus how it is presented. */
export const row = <S extends object>(spec: S, presentation: Presentation = {}): S & Presentation => ({
  ...spec,
  ...presentation,
});

export const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
