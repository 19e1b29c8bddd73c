// Which backends log people in (contract §8): `AUTH_BACKENDS` over the IMAP_* and LDAP_* settings,
// or `AUTH_CONFIG=FILE` (which also lists the identity providers of contract §10), a JSON file validated against docs/auth-config.schema.json at start-up
// (an invalid file stops start-up naming the path of the bad entry, as an import does, §4). Each
// rule of a backend's settings is decided here once, for the environment and the file alike, and
// the result is the backends' own option types (backends/build.ts), which take nothing else.
import { existsSync, readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import type { BackendKind } from '../backends/authenticator.ts';
import type { BackendSpec } from '../backends/build.ts';
import type { ImapSettings } from '../backends/imap/settings.ts';
import type { LdapSecurity, LdapSettings } from '../backends/ldap/authenticator.ts';
import type { GroupDirectorySettings } from '../backends/ldap/groups-reader.ts';
import type { OidcSettings } from '../backends/oidc/settings.ts';
import { ConfigError, isLoopbackHost } from './error.ts';
import { groupSyncSettings, type RawGroupSync } from './group-sync-config.ts';

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

const AUTH_CONFIG_SCHEMA_PATH = new URL('../../docs/auth-config.schema.json', import.meta.url);

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

/** The fields of an `oidc` entry (contract §10) before defaults and cross-checks. */
interface RawOidc {
  label?: string;
  issuer?: string;
  clientId?: string;
  clientSecret?: string;
  privateKeyFile?: string;
  privateKeyId?: string;
  scopes?: string;
  usernameClaim?: string;
}

type FileEntry = RawLdap &
  RawImap &
  RawOidc & {
    kind: BackendKind | 'oidc';
    name: string;
    domains?: string[];
    groups?: RawGroupSync;
  };

/**
 * The file's password backends, in order, its identity providers (§10), and the group sync of the
 * one `ldap` entry with a `groups` object (§11).
 */
export interface AuthConfigFile {
  readonly backends: ConfiguredBackend[];
  readonly providers: OidcSettings[];
  readonly groupSync: { readonly backend: string; readonly directory: GroupDirectorySettings } | null;
}

/** contract §10: the redirect URI registered at a provider, under PUBLIC_URL (no trailing slash). */
function oidcRedirectUri(publicUrl: string, name: string): string {
  return `${publicUrl}/api/auth/oidc/${name}/callback`;
}

/**
 * Defaults and the rules of a provider's settings a schema cannot say: `openid` among the scopes, the
 * key file there. The schema has required the label, the issuer (https://), the client id and one of
 * a secret or a key. `publicUrl` null: PUBLIC_URL is missing, which start-up names.
 */
function oidcSettings(
  entry: RawOidc & { name: string; domains?: string[]; caFile?: string; timeoutMs?: number },
  refuse: Refuse,
  publicUrl: string | null,
): OidcSettings {
  if (publicUrl === null) {
    throw new ConfigError(
      'PUBLIC_URL',
      `required with an oidc backend ("${entry.name}"): the origin browsers reach this service at, e.g. https://club.example.org (the redirect URI is PUBLIC_URL/api/auth/oidc/${entry.name}/callback)`,
    );
  }
  const scope = entry.scopes ?? 'openid email profile';
  if (!scope.split(' ').includes('openid')) refuse('scopes', 'must include openid');
  const clientAuth: OidcSettings['clientAuth'] =
    entry.clientSecret === undefined
      ? {
          method: 'private_key_jwt',
          privateKeyFile: existingFile(entry.privateKeyFile, (message) => refuse('privateKeyFile', message))!,
          keyId: entry.privateKeyId ?? null,
        }
      : { method: 'client_secret_basic', secret: entry.clientSecret };
  return {
    name: entry.name,
    label: entry.label!,
    issuer: entry.issuer!,
    clientId: entry.clientId!,
    clientAuth,
    scope,
    usernameClaim: entry.usernameClaim ?? 'email',
    domains: entry.domains ?? null,
    caFile: existingFile(entry.caFile, (message) => refuse('caFile', message)),
    redirectUri: oidcRedirectUri(publicUrl, entry.name),
    timeoutMs: entry.timeoutMs ?? 5000,
  };
}

/**
 * Reads and validates the AUTH_CONFIG file; throws ConfigError naming the file and the bad entry.
 * `publicUrl` is PUBLIC_URL (null when unset: an `oidc` entry then stops start-up naming it).
 */
export function readAuthConfig(
  file: string,
  groupSyncLimits: { readonly timeoutMs: number; readonly pageSize: number },
  publicUrl: string | null,
): AuthConfigFile {
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
  let groupSync: AuthConfigFile['groupSync'] = null;
  const backends: ConfiguredBackend[] = [];
  const providers: OidcSettings[] = [];
  entries.forEach((entry, index) => {
    const at: Refuse = (field, message) => refuseAt(`backends[${index}].${field}`, message);
    if (names.has(entry.name)) at('name', `"${entry.name}" is used twice`);
    names.add(entry.name);
    const domains = entry.domains ?? null;
    // contract §10: a provider takes no part in password logins; it is not one of the chain's backends.
    if (entry.kind === 'oidc') {
      providers.push(oidcSettings(entry, at, publicUrl));
      return;
    }
    if (entry.kind === 'ldap') {
      const ldap = ldapSettings(entry, at);
      if (entry.groups !== undefined) {
        // contract §11: one directory's groups; two would fight over the same synced groups.
        if (groupSync !== null) at('groups', `only one backend may sync groups (${groupSync.backend} does)`);
        groupSync = {
          backend: entry.name,
          directory: groupSyncSettings(entry.groups, ldap, groupSyncLimits, at),
        };
      }
      backends.push({ kind: 'ldap', name: entry.name, domains, ldap });
      return;
    }
    // The schema requires an IMAP entry's host.
    backends.push({ kind: 'imap', name: entry.name, domains, imap: imapSettings(entry, at) });
  });
  return { backends, providers, groupSync };
}
