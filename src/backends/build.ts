// Backends from their specs (contract §8): each kind built by its own create<Kind>Backend
// (imap/backend.ts, ldap/backend.ts), and the chain over all of them in order. The specs are plain
// options that config/ parsed and checked; nothing here reads a setting.
import type { Authenticator, Backend, BackendObserver } from './authenticator.ts';
import { type ChainOptions, createChain } from './chain.ts';
import { createImapBackend, type ImapSeams } from './imap/backend.ts';
import type { ImapBackendSpec } from './imap/settings.ts';
import { createLdapBackend } from './ldap/backend.ts';
import type { LdapBackendSpec } from './ldap/settings.ts';

/** One backend to build: its kind's settings, its name, and the mail domains it serves (null: all). */
export type BackendSpec = ImapBackendSpec | LdapBackendSpec;

/** The backend of `spec`. `imap`: the IMAP backend's seams (tests script its login and clock). */
export function createBackend(spec: BackendSpec, observe?: BackendObserver, imap?: ImapSeams): Backend {
  return spec.kind === 'imap' ? createImapBackend(spec, observe, imap) : createLdapBackend(spec, observe);
}

/** The chain of every configured backend, in order. */
export function createAuthenticator(
  specs: readonly BackendSpec[],
  options: ChainOptions & { readonly observe?: BackendObserver; readonly imap?: ImapSeams },
): Authenticator {
  return createChain(
    specs.map((spec) => createBackend(spec, options.observe, options.imap)),
    options,
  );
}
