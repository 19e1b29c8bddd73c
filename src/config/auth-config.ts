// `AUTH_CONFIG=FILE` (contract §8, §10): the backends and identity providers of a JSON file validated
// against docs/auth-config.schema.json at start-up; an invalid file stops start-up naming the path
// of the bad entry, as an import does (§4). Each backend's rules are backend-settings.ts's, shared
// with the environment's settings (config.ts).
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import type { BackendKind } from '../backends/authenticator.ts';
import type { GroupDirectorySettings } from '../backends/ldap/groups/reader.ts';
import type { OidcSettings } from '../backends/oidc/settings.ts';
import {
  type ConfiguredBackend,
  existingFile,
  imapSettings,
  ldapSettings,
  type RawImap,
  type RawLdap,
  type Refuse,
} from './backend-settings.ts';
import { ConfigError } from './error.ts';
import { groupSyncSettings, type RawGroupSync } from './group-sync-config.ts';

const AUTH_CONFIG_SCHEMA_PATH = new URL('../../docs/auth-config.schema.json', import.meta.url);

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
  clientSecretFile?: string;
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
  const secret =
    entry.clientSecretFile === undefined
      ? entry.clientSecret
      : secretFromFile(entry.clientSecretFile, (message) => refuse('clientSecretFile', message));
  const clientAuth: OidcSettings['clientAuth'] =
    secret === undefined
      ? {
          method: 'private_key_jwt',
          privateKeyFile: existingFile(entry.privateKeyFile, (message) => refuse('privateKeyFile', message))!,
          keyId: entry.privateKeyId ?? null,
        }
      : { method: 'client_secret_basic', secret };
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
 * A secret kept in a file of its own (a compose or Kubernetes secret) rather than in AUTH_CONFIG,
 * trimmed as the environment's `NAME_FILE` settings are; empty or unreadable stops start-up.
 */
function secretFromFile(file: string, refuse: (message: string) => never): string {
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (err) {
    return refuse(`cannot read "${file}" (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  const value = content.trim();
  return value === '' ? refuse(`"${file}" is empty`) : value;
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
