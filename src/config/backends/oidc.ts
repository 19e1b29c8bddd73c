// One identity provider's settings (contract §10), from an `oidc` entry of AUTH_CONFIG (identity
// providers have no environment settings): the defaults and the rules the file's schema cannot say;
// the result is the OIDC backend's own option type (backends/oidc/settings.ts).
import type { OidcSettings } from '../../backends/oidc/settings.ts';
import { ConfigError, existingFile, type Refuse, secretFromFile } from '../error.ts';

/** The fields of an `oidc` entry (contract §10) before defaults and cross-checks. */
export interface RawOidc {
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

/** contract §10: the redirect URI registered at a provider, under PUBLIC_URL (no trailing slash). */
function oidcRedirectUri(publicUrl: string, name: string): string {
  return `${publicUrl}/api/auth/oidc/${name}/callback`;
}

/**
 * Defaults and the rules of a provider's settings a schema cannot say: `openid` among the scopes, the
 * key file there. The schema has required the label, the issuer (https://), the client id and one of
 * a secret or a key. `publicUrl` null: PUBLIC_URL is missing, which start-up names.
 */
export function oidcSettings(
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
