// One LDAP directory's settings (contract §8): the LDAP_* rows of the settings table, and the rules
// they obey whether they come from the environment (environment.ts) or an AUTH_CONFIG entry
// (auth-config.ts); the result is the LDAP backend's own option type (backends/ldap/settings.ts).
import type { LdapSecurity, LdapSettings } from '../../backends/ldap/settings.ts';
import { existingFile, type Refuse, refusePlaintext } from '../error.ts';
import { boolean, file, integer, ldapUrl, oneOf, row, text } from '../settings-parsers.ts';

/** LDAP_* rows, in table order. */
export const LDAP_SETTINGS = {
  LDAP_URL: row(
    ldapUrl({ default: undefined, desc: 'the directory: `ldaps://HOST[:636]` or `ldap://HOST[:389]`' }),
    {
      unset: '(required for `ldap`)',
    },
  ),
  LDAP_SECURITY: row(
    oneOf<LdapSecurity>(['tls', 'starttls', 'plain'])({
      default: undefined,
      desc: '`tls` (ldaps://), `starttls` (ldap://, required, never opportunistic) or `plain` (ldap://)',
    }),
    { unset: '`tls` for ldaps://, `starttls` for ldap://' },
  ),
  LDAP_ALLOW_PLAINTEXT: row(
    boolean({ default: false, desc: 'allow `plain` to a host that is not loopback' }),
  ),
  LDAP_CA_FILE: row(
    file({
      default: undefined,
      desc: 'a PEM CA added to the system roots (certificates are always verified)',
    }),
    { unset: '(system roots only)' },
  ),
  LDAP_USER_DN: row(
    text({
      default: undefined,
      desc: 'direct bind: a DN template, e.g. `uid={username},ou=people,dc=example,dc=org` (the username escaped per RFC 4514)',
    }),
    { unset: '(search, then bind)' },
  ),
  LDAP_BIND_DN: row(
    text({ default: undefined, desc: 'search, then bind: the service account that searches' }),
    { unset: '(direct bind)' },
  ),
  LDAP_BIND_PASSWORD: row(text({ default: undefined, desc: "the service account's password" }), {
    unset: '(unset)',
    secret: 'value',
  }),
  LDAP_BASE_DN: row(text({ default: undefined, desc: 'where the search looks (whole subtree)' }), {
    unset: '(required with `LDAP_BIND_DN`)',
  }),
  LDAP_USER_FILTER: row(
    text({
      default: '(uid={username})',
      desc: 'the search filter (the username escaped per RFC 4515); exactly one entry must match',
    }),
  ),
  LDAP_TIMEOUT_MS: row(
    integer(100, 120_000)({ default: 5000, desc: 'deadline of one LDAP login: connect, TLS and the binds' }),
  ),
  LDAP_MAX_CONCURRENCY: row(
    integer(1, 1024)({ default: 32, desc: 'LDAP logins at once; more wait in a queue' }),
  ),
  LDAP_QUEUE_LIMIT: row(
    integer(
      0,
      100_000,
    )({ default: 1000, desc: 'LDAP logins that may wait; beyond that a login fails at once' }),
  ),
};

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
