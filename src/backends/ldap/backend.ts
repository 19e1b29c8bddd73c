// The LDAP backend (contract §8): a username and password verified by a bind to the directory
// (authenticator.ts), behind the guard every backend shares (backends/guard.ts: cap, queue,
// single-flight, breaker), and a readiness probe without credentials over the same TLS options.
import type { Backend, BackendObserver } from '../authenticator.ts';
import { guardedBackend } from '../guard.ts';
import { RefusalTiming } from '../refusal-timing.ts';
import { backendTls } from '../tls.ts';
import { ldapLoginOnce, probeLdap } from './authenticator.ts';
import { classifyLdapError } from './errors.ts';
import type { LdapBackendSpec } from './settings.ts';

/**
 * Waited for a refusal decided without the directory until a first wrong password has been refused:
 * directories answer invalidCredentials without a deliberate delay (OpenLDAP, Active Directory), so
 * about a connection, a TLS handshake and a bind.
 */
const LDAP_REFUSAL_SEED_MS = 100;

/**
 * The LDAP backend of `spec`: its logins guarded, its probe; the TLS options are built once and
 * shared by both. `observe` is told every attempt that reached the directory (metrics).
 */
export function createLdapBackend(
  spec: LdapBackendSpec,
  observe: BackendObserver = () => undefined,
): Backend {
  const settings = spec.ldap;
  const tls = backendTls(new URL(settings.url).hostname, settings.caFile);
  return guardedBackend(
    spec,
    (username, password) => ldapLoginOnce(settings, tls, username, password),
    {
      label: 'LDAP',
      maxConcurrency: settings.maxConcurrency,
      queueLimit: settings.queueLimit,
      timeoutMs: settings.timeoutMs,
      observe,
      classify: classifyLdapError,
      timing: new RefusalTiming(LDAP_REFUSAL_SEED_MS),
    },
    () => probeLdap(settings, tls),
  );
}
