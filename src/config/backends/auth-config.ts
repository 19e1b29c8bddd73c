// `AUTH_CONFIG=FILE` (contract §8, §10): the backends and identity providers of a JSON file validated
// against docs/auth-config.schema.json at start-up; an invalid file stops start-up naming the path
// of the bad entry, as an import does (§4). Each kind's rules are its own module's (imap.ts, ldap.ts,
// oidc.ts, group-sync.ts), shared with the environment's settings (environment.ts).
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import type { BackendKind } from '../../backends/authenticator.ts';
import type { GroupDirectorySettings } from '../../backends/ldap/groups/reader.ts';
import type { OidcSettings } from '../../backends/oidc/settings.ts';
import { ConfigError, type Refuse } from '../error.ts';
import type { ConfiguredBackend } from './chain.ts';
import { groupSyncSettings, type RawGroupSync } from './group-sync.ts';
import { imapSettings, type RawImap } from './imap.ts';
import { ldapSettings, type RawLdap } from './ldap.ts';
import { oidcSettings, type RawOidc } from './oidc.ts';

const AUTH_CONFIG_SCHEMA_PATH = new URL('../../../docs/auth-config.schema.json', import.meta.url);

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
