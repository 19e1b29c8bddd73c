// The rows of the settings table for the authentication backends (contract §5, §8, §10): which
// backends, the public origin identity providers send people back to, then IMAP's and LDAP's own settings. settings.ts places them in the one table.
import {
  backendKinds,
  boolean,
  file,
  type ImapSecurity,
  integer,
  type LdapSecurity,
  ldapUrl,
  oneOf,
  publicUrl,
  row,
  text,
} from './settings-parsers.ts';

/** AUTH_*, IMAP_* and LDAP_* rows, in table order. */
export const BACKEND_SETTINGS = {
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
  IMAP_HOST: row(text({ default: undefined, desc: 'the IMAP server that checks passwords' }), {
    unset: '(required to serve)',
  }),
  IMAP_PORT: row(integer(1, 65535)({ default: undefined, desc: 'its port' }), {
    unset: '993 (143 for starttls and plain)',
  }),
  IMAP_SECURITY: row(
    oneOf<ImapSecurity>(['tls', 'starttls', 'plain'])({
      default: 'tls',
      desc: '`tls` (implicit TLS), `starttls` (required, never opportunistic) or `plain`',
    }),
  ),
  IMAP_ALLOW_PLAINTEXT: row(
    boolean({ default: false, desc: 'allow `plain` to a host that is not loopback' }),
  ),
  IMAP_CA_FILE: row(
    file({
      default: undefined,
      desc: 'a PEM CA added to the system roots (certificates are always verified)',
    }),
    { unset: '(system roots only)' },
  ),
  IMAP_TIMEOUT_MS: row(
    integer(
      100,
      120_000,
    )({
      default: 5000,
      desc: 'deadline of one IMAP login: connect, TLS, greeting and authentication',
    }),
  ),
  IMAP_MAX_CONCURRENCY: row(
    integer(1, 1024)({ default: 32, desc: 'IMAP logins at once; more wait in a queue' }),
  ),
  IMAP_QUEUE_LIMIT: row(
    integer(0, 100_000)({ default: 1000, desc: 'logins that may wait; beyond that a login fails at once' }),
  ),
  IMAP_FORWARD_CLIENT_IP: row(
    boolean({
      default: false,
      desc: "send the client's IP in the IMAP `ID` command (`x-originating-ip`); over TLS only (`tls` or `starttls`: it is sent after STARTTLS)",
    }),
  ),
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
