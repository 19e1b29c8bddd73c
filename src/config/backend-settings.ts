// The rules of each password backend's settings (contract §5, §8), decided once for the environment
// (config.ts) and the AUTH_CONFIG file (auth-config.ts) alike; the result is the backends' own option
// types (backends/build.ts), which take nothing else.
import { existsSync } from 'node:fs';
import type { BackendSpec } from '../backends/build.ts';
import type { ImapSettings } from '../backends/imap/settings.ts';
import type { LdapSecurity, LdapSettings } from '../backends/ldap/authenticator.ts';
import { ConfigError, isLoopbackHost } from './error.ts';

type ImapSecurity = ImapSettings['security'];

/** IMAP settings of one backend; `host` null only from the environment (the CLI runs without it). */
export type ConfiguredImap = Omit<ImapSettings, 'host'> & {
  readonly host: string | null;
  readonly allowPlaintext: boolean;
};

/** A backend as configured: a BackendSpec, but an IMAP host may still be missing (servingBackends). */
export type ConfiguredBackend =
  | (Omit<Extract<BackendSpec, { kind: 'imap' }>, 'imap'> & { readonly imap: ConfiguredImap })
  | Extract<BackendSpec, { kind: 'ldap' }>;

/** The LDAP fields before defaults and cross-checks (from the environment or the file). */
export interface RawLdap {
  url?: string;
  security?: LdapSecurity;
  allowPlaintext?: boolean;
  caFile?: string;
  userDn?: string;
  bindDn?: string;
  bindPassword?: string;
  baseDn?: string;
  userFilter?: string;
  timeoutMs?: number;
  maxConcurrency?: number;
  queueLimit?: number;
}

/** The IMAP fields before defaults and cross-checks (from the environment or the file). */
export interface RawImap {
  host?: string;
  port?: number;
  security?: ImapSecurity;
  allowPlaintext?: boolean;
  caFile?: string;
  timeoutMs?: number;
  maxConcurrency?: number;
  queueLimit?: number;
  forwardClientIp?: boolean;
}

/** Throws the ConfigError that names `field` the way the operator wrote it. */
export type Refuse = (field: string, message: string) => never;

/** contract §6, §8: a password in clear over the network is a misconfiguration unless asked for by name. */
function refusePlaintext(host: string, allowed: boolean | undefined, refuse: Refuse): void {
  if (isLoopbackHost(host) || allowed === true) return;
  refuse(
    'security',
    `plain sends passwords in clear; allowed only to a loopback host unless plain text is allowed explicitly (host "${host}")`,
  );
}

/**
 * Defaults and the rules of an IMAP server's settings: the port follows the security, plain text
 * only to loopback unless allowed, the client's address forwarded only inside TLS (contract §5).
 */
export function imapSettings(raw: RawImap, refuse: Refuse): ConfiguredImap {
  const security = raw.security ?? 'tls';
  const host = raw.host ?? null;
  if (security === 'plain' && host !== null) refusePlaintext(host, raw.allowPlaintext, refuse);
  // contract §5: the ID command is sent after STARTTLS too, never in clear.
  if (raw.forwardClientIp === true && security === 'plain') {
    refuse('forwardClientIp', 'needs TLS (tls or starttls): the address travels only inside TLS');
  }
  return {
    host,
    port: raw.port ?? (security === 'tls' ? 993 : 143),
    security,
    allowPlaintext: raw.allowPlaintext ?? false,
    caFile: existingFile(raw.caFile, (message) => refuse('caFile', message)),
    timeoutMs: raw.timeoutMs ?? 5000,
    maxConcurrency: raw.maxConcurrency ?? 32,
    queueLimit: raw.queueLimit ?? 1000,
    forwardClientIp: raw.forwardClientIp ?? false,
  };
}

/**
 * The backends as serving needs them: every IMAP server has a host (contract §8: IMAP_HOST is needed
 * only when the environment's IMAP server is asked; the admin CLI runs without it). The one place
 * that rule is decided.
 */
export function servingBackends(backends: readonly ConfiguredBackend[]): BackendSpec[] {
  return backends.map((spec): BackendSpec => {
    if (spec.kind === 'ldap') return spec;
    const { host } = spec.imap;
    if (host === null) throw new ConfigError('IMAP_HOST', 'required: the IMAP server that checks passwords');
    return { ...spec, imap: { ...spec.imap, host } };
  });
}

/**
 * Defaults and the rules a schema cannot say: the security matches the URL, plain text only to
 * loopback unless allowed, exactly one of direct bind and search-then-bind. `refuse` names a
 * field as the operator wrote it (`LDAP_URL`, or `AUTH_CONFIG: FILE: backends[1].url`).
 */
export function ldapSettings(raw: RawLdap, refuse: Refuse): LdapSettings {
  if (raw.url === undefined) refuse('url', 'required: ldaps://HOST[:636] or ldap://HOST[:389]');
  let url: URL;
  try {
    url = new URL(raw.url);
  } catch {
    refuse('url', `"${raw.url}" is not an ldap:// or ldaps:// URL`);
  }
  if (
    (url.protocol !== 'ldap:' && url.protocol !== 'ldaps:') ||
    url.hostname === '' ||
    !/^\/?$/.test(url.pathname)
  ) {
    refuse('url', `"${raw.url}" is not ldaps://HOST[:PORT] or ldap://HOST[:PORT]`);
  }
  const implicit = url.protocol === 'ldaps:';
  const security = raw.security ?? (implicit ? 'tls' : 'starttls');
  if (implicit !== (security === 'tls')) {
    refuse('security', `${security} needs an ${implicit ? 'ldap' : 'ldaps'}:// URL`);
  }
  if (security === 'plain') refusePlaintext(url.hostname, raw.allowPlaintext, refuse);
  const direct = raw.userDn !== undefined;
  if (direct === (raw.bindDn !== undefined)) {
    refuse('userDn', 'set either a user DN template (direct bind) or a bind DN (search, then bind)');
  }
  if (direct && !raw.userDn?.includes('{username}')) {
    refuse('userDn', 'the template needs {username}');
  }
  if (!direct) {
    // An empty service password would be an unauthenticated bind (RFC 4513 §5.1.2).
    if ((raw.bindPassword ?? '') === '') refuse('bindPassword', 'required with a bind DN');
    if (raw.baseDn === undefined) refuse('baseDn', 'required with a bind DN');
  }
  const userFilter = raw.userFilter ?? '(uid={username})';
  if (!/^\(.*\{username\}.*\)$/.test(userFilter)) {
    refuse('userFilter', 'expected a parenthesised filter with {username}');
  }
  return {
    url: raw.url,
    security,
    allowPlaintext: raw.allowPlaintext ?? false,
    caFile: existingFile(raw.caFile, (message) => refuse('caFile', message)),
    userDn: raw.userDn ?? null,
    bindDn: raw.bindDn ?? null,
    bindPassword: raw.bindPassword ?? null,
    baseDn: raw.baseDn ?? null,
    userFilter,
    timeoutMs: raw.timeoutMs ?? 5000,
    maxConcurrency: raw.maxConcurrency ?? 32,
    queueLimit: raw.queueLimit ?? 1000,
  };
}

export function existingFile(file: string | undefined, refuse: (message: string) => never): string | null {
  if (file === undefined) return null;
  if (!existsSync(file)) refuse(`no such file "${file}"`);
  return file;
}
