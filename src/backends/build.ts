// Backends from their configuration (contract §8): each kind's single attempt behind the shared
// guard, its credential-free probe, and the chain over all of them in order.
import { ConfigError } from '../config/error.ts';
import type { BackendSpec } from './auth-config.ts';
import type { Authenticator, Backend, VerifyResult } from './authenticator.ts';
import { type ChainOptions, createChain } from './chain.ts';
import { guardAttempts } from './guard.ts';
import { createImapAuthenticator, type ImapSettings, imapTlsOptions } from './imap/authenticator.ts';
import { probeImapServer } from './imap/client.ts';
import { classifyLdapError, ldapLoginOnce, probeLdap } from './ldap/authenticator.ts';
import { RefusalTiming } from './refusal-timing.ts';
import { backendTls } from './tls.ts';

/**
 * Waited for a refusal decided without the directory until a first wrong password has been refused:
 * directories answer invalidCredentials without a deliberate delay (OpenLDAP, Active Directory), so
 * about a connection, a TLS handshake and a bind.
 */
export const LDAP_REFUSAL_SEED_MS = 100;

/** Told the kind, name, result and duration of every attempt that reached a server (metrics). */
export type BackendObserver = (backend: Backend, result: VerifyResult, seconds: number) => void;

/** One backend of `spec`; throws ConfigError when serving needs a setting that is missing. */
export function createBackend(spec: BackendSpec, observe: BackendObserver = () => undefined): Backend {
  const { name, kind, domains } = spec;
  const base = { name, kind, domains, close: async () => undefined };
  if (spec.kind === 'imap') {
    if (spec.imap.host === null)
      throw new ConfigError('IMAP_HOST', 'required: the IMAP server that checks passwords');
    const settings: ImapSettings = { ...spec.imap, host: spec.imap.host };
    const tls = imapTlsOptions(settings);
    const backend: Backend = {
      ...base,
      ...createImapAuthenticator(settings, {
        observe: (result, seconds) => observe(backend, result, seconds),
      }),
      probe: () => probeImapServer(settings, tls),
    };
    return backend;
  }
  const settings = spec.ldap;
  const tls = backendTls(new URL(settings.url).hostname, settings.caFile);
  const guarded = guardAttempts((username, password) => ldapLoginOnce(settings, tls, username, password), {
    label: 'LDAP',
    maxConcurrency: settings.maxConcurrency,
    queueLimit: settings.queueLimit,
    timeoutMs: settings.timeoutMs,
    observe: (result, seconds) => observe(backend, result, seconds),
    classify: classifyLdapError,
    timing: new RefusalTiming(LDAP_REFUSAL_SEED_MS),
  });
  const backend: Backend = { ...base, ...guarded, probe: () => probeLdap(settings, tls) };
  return backend;
}

/** The chain of every configured backend, in order. */
export function createAuthenticator(
  specs: readonly BackendSpec[],
  options: ChainOptions & { readonly observe?: BackendObserver },
): Authenticator {
  return createChain(
    specs.map((spec) => createBackend(spec, options.observe)),
    options,
  );
}
