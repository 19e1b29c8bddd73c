// Which password backends are asked, in order (contract §8): AUTH_BACKENDS over the IMAP_* and
// LDAP_* settings, or the AUTH_CONFIG file (which also names identity providers, §10, under
// PUBLIC_URL); the rows of the settings table for that choice, a backend as configured, and what
// serving needs of them (servingBackends). Each kind's own rules are imap.ts's and ldap.ts's.
import type { BackendSpec } from '../../backends/build.ts';
import { ConfigError } from '../error.ts';
import { backendKinds, file, publicUrl, row } from '../settings-parsers.ts';
import type { ConfiguredImap } from './imap.ts';

/** AUTH_BACKENDS, AUTH_CONFIG and PUBLIC_URL rows, in table order. */
export const CHAIN_SETTINGS = {
  AUTH_BACKENDS: row(
    backendKinds({
      default: ['imap'],
      desc: 'the backends asked, in order, comma-separated: `imap`, `ldap`; each kind reads only its own settings',
    }),
  ),
  AUTH_CONFIG: row(
    file({
      default: undefined,
      desc: 'a JSON file of backends (several of one kind, by mail domain; identity providers, kind `oidc`), validated against `docs/auth-config.schema.json`; replaces `AUTH_BACKENDS`, `IMAP_*` and `LDAP_*`',
    }),
    { unset: '(the settings below)' },
  ),
  PUBLIC_URL: row(
    publicUrl({
      default: undefined,
      desc: 'the origin browsers reach this service at, e.g. `https://club.example.org`; required once `AUTH_CONFIG` lists an `oidc` provider, whose redirect URI is `PUBLIC_URL/api/auth/oidc/{name}/callback` (docs/oidc.md)',
    }),
    { unset: '(required with an `oidc` provider)' },
  ),
};

/** A backend as configured: a BackendSpec, but an IMAP host may still be missing (servingBackends). */
export type ConfiguredBackend =
  | (Omit<Extract<BackendSpec, { kind: 'imap' }>, 'imap'> & { readonly imap: ConfiguredImap })
  | Extract<BackendSpec, { kind: 'ldap' }>;

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
