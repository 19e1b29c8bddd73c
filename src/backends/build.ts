// Backends from their specs (contract §8): each kind's single attempt behind the shared guard, its
// credential-free probe, and the chain over all of them in order. The specs are plain options that
// config/ parsed and checked; nothing here reads a setting.
import type { Authenticator, Backend, VerifyResult } from './authenticator.ts';
import { type ChainOptions, createChain } from './chain.ts';
import { guardAttempts } from './guard.ts';
import { createImapAuthenticator, type ImapAuthenticatorOptions } from './imap/authenticator.ts';
import { probeImapServer } from './imap/client.ts';
import type { ImapSettings } from './imap/settings.ts';
import { ldapLoginOnce, probeLdap } from './ldap/authenticator.ts';
import { classifyLdapError } from './ldap/errors.ts';
import type { LdapSettings } from './ldap/settings.ts';
import { RefusalTiming } from './refusal-timing.ts';
import { backendTls } from './tls.ts';

/**
 * Waited for a refusal decided without the directory until a first wrong password has been refused:
 * directories answer invalidCredentials without a deliberate delay (OpenLDAP, Active Directory), so
 * about a connection, a TLS handshake and a bind.
 */
const LDAP_REFUSAL_SEED_MS = 100;

/** One backend to build: its kind's settings, its name, and the mail domains it serves (null: all). */
export type BackendSpec =
  | {
      readonly kind: 'imap';
      readonly name: string;
      readonly domains: readonly string[] | null;
      readonly imap: ImapSettings;
    }
  | {
      readonly kind: 'ldap';
      readonly name: string;
      readonly domains: readonly string[] | null;
      readonly ldap: LdapSettings;
    };

/** Told the kind, name, result and duration of every attempt that reached a server (metrics). */
export type BackendObserver = (backend: Backend, result: VerifyResult, seconds: number) => void;

/**
 * One backend of `spec`; its TLS options are built once and shared by logins and probes. `imap`: the
 * IMAP authenticator's seams (tests script its login and clock); `observe` wins over theirs.
 */
export function createBackend(
  spec: BackendSpec,
  observe: BackendObserver = () => undefined,
  imap: ImapAuthenticatorOptions = {},
): Backend {
  const { name, kind, domains } = spec;
  const base = { name, kind, domains, close: async () => undefined };
  if (spec.kind === 'imap') {
    const settings = spec.imap;
    const tls = backendTls(settings.host, settings.caFile);
    const backend: Backend = {
      ...base,
      ...createImapAuthenticator(settings, tls, {
        ...imap,
        observe: (result, seconds) => {
          imap.observe?.(result, seconds);
          observe(backend, result, seconds);
        },
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
  options: ChainOptions & { readonly observe?: BackendObserver; readonly imap?: ImapAuthenticatorOptions },
): Authenticator {
  return createChain(
    specs.map((spec) => createBackend(spec, options.observe, options.imap)),
    options,
  );
}
