// Every setting, once (contract §6): name, default, meaning, how it is parsed and how it is shown.
// `config.ts` builds the typed Config from this table, `clubhouse config check` lists it, and the
// README's settings table is rendered from it (a test keeps the README equal to the rendering), so
// the three cannot drift. Parsing is envalid's: each validator below only states its rule.
import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { EnvError, makeValidator } from 'envalid';

export type ImapSecurity = 'tls' | 'starttls' | 'plain';
export type LdapSecurity = 'tls' | 'starttls' | 'plain';
export type BackendKindSetting = 'imap' | 'ldap';
export type UsernameCase = 'lower' | 'preserve';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export type TrustProxy = boolean | number | string[];

/** How `config check` prints a value: as is, a URL with its password masked, or only `***`. */
type Secrecy = 'url' | 'value';

interface Presentation {
  /** What the README says for the default, and the report for an unset optional setting. */
  readonly unset?: string;
  readonly secret?: Secrecy;
}

const integer = (min: number, max: number) =>
  makeValidator<number>((raw) => {
    if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      throw new EnvError(`expected a whole number from ${min} to ${max}, got "${raw}"`);
    }
    return Number(raw);
  });

const boolean = makeValidator<boolean>((input) => {
  const raw = input.toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(raw)) return true;
  if (['false', '0', 'no', 'off'].includes(raw)) return false;
  throw new EnvError(`expected true or false, got "${raw}"`);
});

const oneOf = <T extends string>(allowed: readonly T[]) =>
  makeValidator<T>((input) => {
    const raw = input.toLowerCase();
    const found = allowed.find((value) => value === raw);
    if (found === undefined) throw new EnvError(`expected one of ${allowed.join(', ')}, got "${raw}"`);
    return found;
  });

const text = makeValidator<string>((raw) => raw);

const file = makeValidator<string>((raw) => {
  if (!existsSync(raw)) throw new EnvError(`no such file "${raw}"`);
  return raw;
});

const matching = (pattern: RegExp, expected: string) =>
  makeValidator<string>((raw) => {
    if (!pattern.test(raw)) throw new EnvError(expected);
    return raw;
  });

const origins = makeValidator<string[]>((raw) =>
  raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
    .map((item) => {
      const problem = `"${item}" is not an origin like https://example.org`;
      let url: URL;
      try {
        url = new URL(item);
      } catch {
        throw new EnvError(problem);
      }
      if (!['http:', 'https:'].includes(url.protocol) || url.origin !== item.replace(/\/$/, '')) {
        throw new EnvError(problem);
      }
      return url.origin;
    }),
);

const trustProxy = makeValidator<TrustProxy>((raw) => {
  if (raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^[0-9]+$/.test(raw)) return Number(raw);
  const entries = raw.split(',').map((item) => item.trim());
  for (const entry of entries) {
    const [address, prefix] = entry.split('/');
    const family = isIP(address ?? '');
    const prefixOk =
      prefix === undefined || (/^[0-9]+$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (family === 0 || !prefixOk) {
      throw new EnvError(`expected false, true, a hop count, or addresses/CIDRs, got "${entry}"`);
    }
  }
  return entries;
});

// An entry of ALLOWED_HOSTS: `*`, a name (a leading dot: and its subdomains), or a bracketed IPv6
// literal; the forms Django's host check can match, since it compares the Host without its port.
const ALLOWED_HOST = /^(\*|\.?[a-z0-9-]+(\.[a-z0-9-]+)*\.?|\[[a-f0-9]*:[a-f0-9.:]+\])$/;

const allowedHosts = makeValidator<string[]>((raw) => {
  const entries = raw
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item !== '');
  if (entries.length === 0) throw new EnvError('lists no host name');
  for (const entry of entries) {
    if (!ALLOWED_HOST.test(entry)) {
      throw new EnvError(
        `"${entry}" is not a host name like club.example.org, .example.org, [::1] or * (no scheme, no port)`,
      );
    }
  }
  // A trailing dot is stripped from the Host before comparing (Django), so from the entries too.
  return entries.map((entry) => (entry.length > 1 && entry.endsWith('.') ? entry.slice(0, -1) : entry));
});

const backendKinds = makeValidator<BackendKindSetting[]>((raw) => {
  const kinds = raw.split(',').map((item) => item.trim().toLowerCase());
  for (const kind of kinds) {
    if (kind !== 'imap' && kind !== 'ldap')
      throw new EnvError(`expected imap and/or ldap, comma-separated, got "${kind}"`);
  }
  if (new Set(kinds).size !== kinds.length) throw new EnvError(`"${raw}" lists a backend twice`);
  return kinds as BackendKindSetting[];
});

const ldapUrl = matching(/^ldaps?:\/\/[^/?#@]+\/?$/, 'expected ldaps://HOST[:636] or ldap://HOST[:389]');

const secretKey = makeValidator<string>((raw) => {
  if (raw.length < 32) throw new EnvError('expected at least 32 characters');
  return raw;
});

/** A row of the table: an envalid spec plus how it is presented. */
const row = <S extends object>(spec: S, presentation: Presentation = {}): S & Presentation => ({
  ...spec,
  ...presentation,
});

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** The settings, in the order the README and the report list them. */
export const SETTINGS = {
  HOST: row(text({ default: '127.0.0.1', desc: 'address to listen on' })),
  PORT: row(integer(0, 65535)({ default: 8000, desc: 'port to listen on' })),
  WORKERS: row(
    integer(
      1,
      64,
    )({
      default: 1,
      desc: 'processes serving the port on this machine (node:cluster); works on every store, SQLite included',
    }),
  ),
  DATABASE_URL: row(
    matching(
      /^(sqlite:.+|postgres(ql)?:\/\/.+)$/,
      'expected sqlite:PATH or postgres://…',
    )({
      default: 'sqlite:data/clubhouse.db',
      desc: 'the database: `sqlite:PATH`, or `postgres://USER:PASSWORD@HOST:5432/DB` (PostgreSQL ≥ 13)',
    }),
    { secret: 'url' },
  ),
  DATABASE_CA_FILE: row(
    file({
      default: undefined,
      desc: "a PEM CA that PostgreSQL's certificate must chain to; implies `sslmode=verify-full` (or put `sslrootcert=FILE` in the URL)",
    }),
    { unset: '(none)' },
  ),
  DATABASE_TRANSACTION_POOLER: row(
    boolean({
      default: false,
      desc: '`true` when PgBouncer (`pool_mode = transaction`) sits in between: no startup parameters, no named prepared statements; `clubhouse migrate` sets the timeouts as role defaults',
    }),
  ),
  SESSION_STORE: row(
    matching(
      /^(rediss?|redis-sentinel):\/\/.+/,
      'expected redis://…, rediss://… or redis-sentinel://… (or leave unset to keep sessions in the database)',
    )({
      default: undefined,
      desc: 'where sessions and throttle counters live: unset (the database) or `redis://[:PASSWORD@]HOST:6379[/DB]` (`rediss://` for TLS, `redis-sentinel://HOST1:26379,HOST2:26379/MASTER` for Sentinel; Redis ≥ 6.2, not Cluster)',
    }),
    { unset: '(the database)', secret: 'url' },
  ),
  REDIS_CA_FILE: row(
    file({
      default: undefined,
      desc: "a PEM CA that Redis's certificate must chain to (`rediss://` only; the certificate is always verified)",
    }),
    { unset: '(system roots only)' },
  ),
  REDIS_KEY_PREFIX: row(
    text({
      default: 'clubhouse:',
      desc: 'prefix of every Redis key, so that several services can share one Redis',
    }),
  ),
  SQLITE_BUSY_TIMEOUT_MS: row(
    integer(
      0,
      60_000,
    )({
      default: 5000,
      desc: "how long a statement waits for another process's write lock before the request answers 503",
    }),
  ),
  AUTH_BACKENDS: row(
    backendKinds({
      default: ['imap'],
      desc: 'the backends asked, in order, comma-separated: `imap`, `ldap`; each kind reads only its own settings',
    }),
  ),
  AUTH_CONFIG: row(
    file({
      default: undefined,
      desc: 'a JSON file of backends (several of one kind, by mail domain), validated against `docs/auth-config.schema.json`; replaces `AUTH_BACKENDS`, `IMAP_*` and `LDAP_*`',
    }),
    { unset: '(the settings below)' },
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
  COOKIE_SECURE: row(
    boolean({
      default: false,
      desc: 'mark cookies `Secure` (they are also Secure when a trusted proxy reports TLS)',
    }),
  ),
  TRUSTED_ORIGINS: row(
    origins({
      default: [],
      desc: 'comma-separated origins allowed to POST cross-origin, with CORS and credentials',
    }),
    { unset: '(none)' },
  ),
  ALLOWED_HOSTS: row(
    allowedHosts({
      default: undefined,
      desc: 'comma-separated host names served, as Django\'s: `club.example.org`, `.example.org` (and subdomains), `[::1]`, `*`; any other `Host` → 400 `{"detail": "Invalid Host header."}` (`/healthz` and `/readyz` answer any `Host`)',
    }),
    { unset: '(any Host)' },
  ),
  TRUST_PROXY: row(
    trustProxy({
      default: false,
      desc: '`true`, a hop count, or proxy addresses/CIDRs whose `X-Forwarded-For`/`-Proto` are believed',
    }),
  ),
  USERNAME_CASE: row(
    oneOf<UsernameCase>(['lower', 'preserve'])({
      default: 'lower',
      desc: '`lower`: usernames are case-insensitive and stored lower-cased; `preserve`',
    }),
  ),
  ALLOW_NEW_USERS: row(
    boolean({
      default: true,
      desc: '`false` admits only users that already exist (imported or created before)',
    }),
  ),
  THROTTLE_USER_FAILURES: row(
    integer(1, 1_000_000)({ default: 5, desc: 'failed logins per username in the window before 429' }),
  ),
  THROTTLE_IP_FAILURES: row(
    integer(1, 1_000_000)({ default: 50, desc: 'failed logins per client IP in the window before 429' }),
  ),
  THROTTLE_WINDOW_SECONDS: row(integer(1, 86_400)({ default: 900, desc: 'the throttle window' })),
  SECRET_KEY: row(
    secretKey({
      default: undefined,
      desc: "keys the throttle's password fingerprints (≥ 32 characters)",
    }),
    { unset: '(random, kept in the database)', secret: 'value' },
  ),
  METRICS_PORT: row(
    integer(
      1,
      65535,
    )({
      default: undefined,
      desc: 'serve `/metrics` on this port (on `HOST`) instead of the main port',
    }),
    { unset: '(on the main port)' },
  ),
  LOG_LEVEL: row(
    oneOf<LogLevel>(LOG_LEVELS)({
      default: 'info',
      desc: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`',
    }),
  ),
  SHUTDOWN_GRACE_MS: row(
    integer(0, 600_000)({ default: 10_000, desc: 'how long SIGTERM waits for in-flight requests' }),
  ),
  HEADERS_TIMEOUT_MS: row(
    integer(
      100,
      600_000,
    )({
      default: 10_000,
      desc: "how long a client may take to send a request's headers (at most `REQUEST_TIMEOUT_MS`)",
    }),
  ),
  REQUEST_TIMEOUT_MS: row(
    integer(100, 600_000)({ default: 30_000, desc: 'how long a client may take to send a whole request' }),
  ),
  KEEP_ALIVE_TIMEOUT_MS: row(
    integer(100, 600_000)({ default: 72_000, desc: 'how long an idle keep-alive connection stays open' }),
  ),
};

export type SettingName = keyof typeof SETTINGS;

type Row = { readonly default?: unknown; readonly desc?: string } & Presentation;

/** Every setting's row, in table order. */
export function settingRows(): [SettingName, Row][] {
  return Object.entries(SETTINGS) as [SettingName, Row][];
}

/** A parsed value as an operator would write it. */
export function formatValue(value: unknown): string {
  if (Array.isArray(value)) return value.join(',');
  return String(value);
}

/** A URL with its password replaced by `***`. */
export function maskUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:/@]*:)[^@]*@/i, '$1***@');
}

/** How `config check` shows one setting's effective value, secrets masked. */
export function presentSetting(name: SettingName, value: unknown): string {
  const setting: Row = SETTINGS[name];
  if (value === undefined || (Array.isArray(value) && value.length === 0)) {
    return setting.unset ?? '(unset)';
  }
  if (setting.secret === 'value') return '***';
  if (setting.secret === 'url') return maskUrl(formatValue(value));
  return formatValue(value);
}

/** The README's settings table, rendered from SETTINGS. */
export function settingsTableMarkdown(): string {
  const lines = ['| Variable | Default | Meaning |', '| --- | --- | --- |'];
  for (const [name, setting] of settingRows()) {
    const fallback =
      setting.default === undefined || (Array.isArray(setting.default) && setting.default.length === 0)
        ? (setting.unset ?? '—')
        : `\`${formatValue(setting.default)}\``;
    lines.push(`| \`${name}\` | ${fallback} | ${setting.desc ?? ''} |`);
  }
  return lines.join('\n');
}
