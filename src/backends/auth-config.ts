// Which backends log people in (contract §8): `AUTH_BACKENDS` over the IMAP_* and LDAP_* settings,
// or `AUTH_CONFIG=FILE`, a JSON file validated against docs/auth-config.schema.json at start-up
// (an invalid file stops start-up naming the path of the bad entry, as an import does, §4).
import { existsSync, readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import { ConfigError, isLoopbackHost } from '../config/error.ts';
import type { BackendKind } from './authenticator.ts';
import type { LdapSecurity, LdapSettings } from './ldap/authenticator.ts';

export type ImapSecurity = 'tls' | 'starttls' | 'plain';

/** IMAP settings of one backend; `host` null only from the environment (the CLI runs without it). */
export interface ImapSpecSettings {
  readonly host: string | null;
  readonly port: number;
  readonly security: ImapSecurity;
  readonly allowPlaintext: boolean;
  readonly caFile: string | null;
  readonly timeoutMs: number;
  readonly maxConcurrency: number;
  readonly queueLimit: number;
  readonly forwardClientIp: boolean;
}

export type BackendSpec =
  | {
      readonly kind: 'imap';
      readonly name: string;
      readonly domains: readonly string[] | null;
      readonly imap: ImapSpecSettings;
    }
  | {
      readonly kind: 'ldap';
      readonly name: string;
      readonly domains: readonly string[] | null;
      readonly ldap: LdapSettings;
    };

export const AUTH_CONFIG_SCHEMA_PATH = new URL('../../docs/auth-config.schema.json', import.meta.url);

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

/** Throws the ConfigError that names `field` the way the operator wrote it. */
export type Refuse = (field: string, message: string) => never;

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
  // contract §8: a password in clear over the network is a misconfiguration unless asked for by name.
  if (security === 'plain' && !isLoopbackHost(url.hostname) && raw.allowPlaintext !== true) {
    refuse(
      'security',
      `plain sends passwords in clear; allowed only to a loopback host unless plain text is allowed explicitly (host "${url.hostname}")`,
    );
  }
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

function existingFile(file: string | undefined, refuse: (message: string) => never): string | null {
  if (file === undefined) return null;
  if (!existsSync(file)) refuse(`no such file "${file}"`);
  return file;
}

/** `backends[1].port` from an ajv error (the import's way of naming a bad entry, §4). */
function errorPath(error: ErrorObject): string {
  let path = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => (/^[0-9]+$/.test(part) ? `[${part}]` : `.${part.replace(/~1/g, '/').replace(/~0/g, '~')}`))
    .join('')
    .replace(/^\./, '');
  const params = error.params as { additionalProperty?: string; missingProperty?: string };
  const extra = params.additionalProperty ?? params.missingProperty;
  if (extra !== undefined) path += path === '' ? extra : `.${extra}`;
  return path === '' ? '(top level)' : path;
}

let validator: ReturnType<Ajv2020['compile']> | null = null;

function validate(document: unknown): ErrorObject[] {
  if (validator === null) {
    const schema = JSON.parse(readFileSync(AUTH_CONFIG_SCHEMA_PATH, 'utf8')) as object;
    validator = new Ajv2020({
      allErrors: true,
      strict: true,
      strictRequired: false,
      useDefaults: false,
    }).compile(schema);
  }
  if (validator(document)) return [];
  // `if`/`oneOf` failures repeat what the errors beside them say precisely.
  return (validator.errors ?? []).filter((e) => e.keyword !== 'if' && e.keyword !== 'oneOf');
}

type FileEntry = RawLdap & {
  kind: BackendKind;
  name: string;
  domains?: string[];
  host?: string;
  port?: number;
  forwardClientIp?: boolean;
};

/** Reads and validates the AUTH_CONFIG file; throws ConfigError naming the file and the bad entry. */
export function readAuthConfig(file: string): BackendSpec[] {
  const refuseAt = (path: string, message: string): never => {
    throw new ConfigError('AUTH_CONFIG', `${file}: ${path}: ${message}`);
  };
  let document: unknown;
  try {
    document = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError('AUTH_CONFIG', `${file}: not readable JSON (${(err as Error).message})`);
  }
  const errors = validate(document);
  if (errors.length > 0) {
    const problems = errors.map((e) => `${errorPath(e)}: ${e.message ?? 'invalid'}`);
    throw new ConfigError('AUTH_CONFIG', `${file}: ${problems.join('; ')}`);
  }
  const entries = (document as { backends: FileEntry[] }).backends;
  const names = new Set<string>();
  return entries.map((entry, index): BackendSpec => {
    const at: Refuse = (field, message) => refuseAt(`backends[${index}].${field}`, message);
    if (names.has(entry.name)) at('name', `"${entry.name}" is used twice`);
    names.add(entry.name);
    const domains = entry.domains ?? null;
    if (entry.kind === 'ldap')
      return { kind: 'ldap', name: entry.name, domains, ldap: ldapSettings(entry, at) };
    const security = entry.security ?? 'tls';
    const host = entry.host ?? '';
    if (security === 'plain' && !isLoopbackHost(host) && entry.allowPlaintext !== true) {
      at('security', `plain sends passwords in clear; allowed only to a loopback host (host "${host}")`);
    }
    // contract §5: the client's address travels only inside TLS (sent after STARTTLS too).
    if (entry.forwardClientIp === true && security === 'plain') {
      at('forwardClientIp', 'needs TLS (tls or starttls): the address travels only inside TLS');
    }
    return {
      kind: 'imap',
      name: entry.name,
      domains,
      imap: {
        host,
        port: entry.port ?? (security === 'tls' ? 993 : 143),
        security,
        allowPlaintext: entry.allowPlaintext ?? false,
        caFile: existingFile(entry.caFile, (message) => at('caFile', message)),
        timeoutMs: entry.timeoutMs ?? 5000,
        maxConcurrency: entry.maxConcurrency ?? 32,
        queueLimit: entry.queueLimit ?? 1000,
        forwardClientIp: entry.forwardClientIp ?? false,
      },
    };
  });
}
