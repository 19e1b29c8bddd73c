// Every setting, once (contract §6): name, default, meaning, how it is parsed and how it is shown.
// `config.ts` builds the typed Config from this table, `clubhouse config check` lists it, and the
// table in docs/configuration.md is rendered from it (a test keeps the page equal to the
// rendering), so the three cannot drift. Parsing is envalid's; the validators are in
// settings-parsers.ts; the stores' rows are beside their rules in stores/, the backends' in backends/.
import { CHAIN_SETTINGS } from './backends/chain.ts';
import { GROUP_SYNC_SETTINGS } from './backends/group-sync.ts';
import { IMAP_SETTINGS } from './backends/imap.ts';
import { LDAP_SETTINGS } from './backends/ldap.ts';
import { PASSKEY_SETTINGS } from './passkeys.ts';
import {
  allowedHosts,
  boolean,
  integer,
  LOG_LEVELS,
  type LogLevel,
  oneOf,
  origins,
  type Presentation,
  row,
  secretKey,
  text,
  trustProxy,
  type UsernameCase,
} from './settings-parsers.ts';
import { STORE_SETTINGS } from './stores/settings.ts';

export type { LogLevel, UsernameCase } from './settings-parsers.ts';

/** The settings, in the order docs/configuration.md and the report list them. */
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
  ...STORE_SETTINGS,
  ...CHAIN_SETTINGS,
  ...IMAP_SETTINGS,
  ...LDAP_SETTINGS,
  ...GROUP_SYNC_SETTINGS,
  ...PASSKEY_SETTINGS,
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
      desc: '`lower`: RFC 8265 UsernameCaseMapped (`ＬＥＮＡ`, `LENA`, `lena` are one user); `preserve`: UsernameCasePreserved',
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
    integer(
      1,
      1_000_000,
    )({
      default: 50,
      desc: 'failed logins per client IP in the window before 429; logins in flight count too, so more than this many at once from one address (a NAT without `TRUST_PROXY`) are refused',
    }),
  ),
  THROTTLE_WINDOW_SECONDS: row(integer(1, 86_400)({ default: 900, desc: 'the throttle window' })),
  THROTTLE_IPV6_PREFIX: row(
    integer(
      1,
      128,
    )({
      default: 64,
      desc: 'an IPv6 client is counted by its network of this prefix length (one subscriber holds a /64 or more)',
    }),
  ),
  AUTH_FAILURE_DELAY_MS: row(
    integer(
      0,
      60_000,
    )({
      default: 500,
      desc: 'a refused login is answered no sooner than this after it began, whatever the backend (a floor, not an addition): a directory that refuses unknown users faster than wrong passwords tells nothing',
    }),
  ),
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
  ACCESS_LOG: row(
    boolean({
      default: false,
      desc: 'one `request completed` log line per request (method, URL, status, time, request id); off by default, as the proxy in front usually logs access (docs/operations.md: Logs and memory). Logins, 5xx errors and warnings are logged either way',
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
function formatValue(value: unknown): string {
  if (Array.isArray(value)) return value.join(',');
  return String(value);
}

/** A URL with its password replaced by `***`. */
function maskUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:/@]*:)[^@]*@/i, '$1***@');
}

/** How `config check` shows one setting's effective value, secrets masked. */
export function presentSetting(name: SettingName, value: unknown): string {
  const setting: Row = SETTINGS[name];
  if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) {
    return setting.unset ?? '(unset)';
  }
  if (setting.secret === 'value') return '***';
  if (setting.secret === 'url') return maskUrl(formatValue(value));
  return formatValue(value);
}

/** The settings table of docs/configuration.md, rendered from SETTINGS. */
export function settingsTableMarkdown(): string {
  const lines = ['| Variable | Default | Meaning |', '| --- | --- | --- |'];
  for (const [name, setting] of settingRows()) {
    const fallback =
      setting.default === undefined ||
      setting.default === null ||
      (Array.isArray(setting.default) && setting.default.length === 0)
        ? (setting.unset ?? '—')
        : `\`${formatValue(setting.default)}\``;
    // A secret may come from a file instead (environment.ts): said in its row, where it is looked up.
    const fromFile = setting.secret === undefined ? '' : `; or \`${name}_FILE\`: a file holding it`;
    lines.push(`| \`${name}\` | ${fallback} | ${setting.desc ?? ''}${fromFile} |`);
  }
  return lines.join('\n');
}
