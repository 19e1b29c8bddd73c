// Settings (contract §6): parsed once, validated, frozen. Nothing else reads process.env.
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseDotenv } from 'dotenv';
import { customCleanEnv } from 'envalid';
import type { ThrottleSettings } from '../auth/throttle.ts';
import type { LdapSettings } from '../backends/ldap/authenticator.ts';
import type { OidcSettings } from '../backends/oidc/settings.ts';
import type { EdgeOptions } from '../http/edge.ts';
import type { StoreOptions } from '../store/options.ts';
import { readAuthConfig } from './auth-config.ts';
import {
  type ConfiguredBackend,
  type ConfiguredImap,
  imapSettings,
  ldapSettings,
  type Refuse,
} from './backend-settings.ts';
import { ConfigError } from './error.ts';
import { type GroupSyncConfig, groupSyncSettings } from './group-sync-config.ts';
import { type LogLevel, SETTINGS, type UsernameCase } from './settings.ts';
import { type StoreSettings, storeOptions } from './store-options.ts';

export { ConfigError } from './error.ts';
export type { LogLevel } from './settings.ts';

/** What the HTTP layer is configured with: the edge's settings and COOKIE_SECURE. */
type HttpSettings = Omit<EdgeOptions, 'logger' | 'metrics' | 'atOnce'> & {
  readonly cookieSecure: boolean;
};

export interface Config extends StoreSettings {
  readonly host: string;
  readonly port: number;
  readonly workers: number;
  /** What the stores are opened with (store-options.ts decides the rules of the settings above). */
  readonly store: StoreOptions;
  /** From the IMAP_* settings; `host` null when unset (the admin CLI runs without it). */
  readonly imap: ConfiguredImap;
  /**
   * The backends asked, in order (contract §8); from AUTH_BACKENDS or the AUTH_CONFIG file. Serving
   * takes them through servingBackends (backend-settings.ts), which requires every IMAP host.
   */
  readonly auth: {
    readonly backends: readonly ConfiguredBackend[];
    /** The identity providers of AUTH_CONFIG (contract §10); none from the environment settings. */
    readonly providers: readonly OidcSettings[];
    /** The AUTH_CONFIG file, or null when the environment settings describe the backends. */
    readonly configFile: string | null;
  };
  /** contract §10: the origin browsers reach the service at (PUBLIC_URL); null when unset. */
  readonly publicUrl: string | null;
  /** The HTTP edge's options (http/edge.ts), and whether cookies are Secure (contract §2). */
  readonly http: HttpSettings;
  readonly logLevel: LogLevel;
  readonly usernameCase: UsernameCase;
  readonly allowNewUsers: boolean;
  readonly throttle: ThrottleSettings;
  /** contract §3: a refused login is answered no sooner than this after it began. */
  readonly authFailureDelayMs: number;
  /** Keys the throttle's password fingerprints; `null`: a random key kept in the database. */
  readonly secretKey: string | null;
  readonly metricsPort: number | null;
  readonly shutdownGraceMs: number;
  /** The group sync (contract §11), or null when no group base is configured. */
  readonly groupSync: GroupSyncConfig | null;
  /** Every setting of the table as parsed (for `clubhouse config check`). */
  readonly settings: CleanedSettings;
}

type Env = Readonly<Record<string, string | undefined>>;

/** Reads `.env` (when present) under the real environment: a variable set in the environment wins. */
export function environmentWithDotenv(env: Env = process.env, dotenvPath = '.env'): Env {
  if (!existsSync(dotenvPath)) return env;
  const fromFile = parseDotenv(readFileSync(dotenvPath));
  return { ...fromFile, ...env };
}

/** The settings of the table parsed from `env` (surrounding white space trimmed, empty = unset). */
function parseSettings(env: Env): CleanedSettings {
  const trimmed: Record<string, string> = {};
  for (const name of Object.keys(SETTINGS)) {
    const value = env[name]?.trim();
    if (value !== undefined && value !== '' && backendSettingRead(name, env)) trimmed[name] = value;
  }
  return customCleanEnv(trimmed, SETTINGS, (cleaned) => cleaned, {
    reporter: ({ errors }) => {
      // The first bad variable in table order, as one line naming it.
      for (const name of Object.keys(SETTINGS)) {
        const error = (errors as Record<string, Error | undefined>)[name];
        if (error !== undefined) throw new ConfigError(name, error.message);
      }
    },
  });
}

/**
 * contract §8: a backend kind's settings are read only when AUTH_BACKENDS lists the kind, and
 * none of them when AUTH_CONFIG describes the backends instead.
 */
function backendSettingRead(name: string, env: Env): boolean {
  const kind = /^(IMAP|LDAP)_/.exec(name)?.[1]?.toLowerCase();
  if (kind === undefined && name !== 'AUTH_BACKENDS') return true;
  if ((env['AUTH_CONFIG']?.trim() ?? '') !== '') return false;
  if (kind === undefined) return true;
  // contract §11: the group sync reads the LDAP_* directory, whoever checks passwords.
  if (kind === 'ldap' && (env['LDAP_GROUP_BASE_DN']?.trim() ?? '') !== '') return true;
  const listed = (env['AUTH_BACKENDS']?.trim() || 'imap').split(',').map((item) => item.trim().toLowerCase());
  return listed.includes(kind);
}

/** `bindPassword` → LDAP_BIND_PASSWORD: an error names the variable the operator set. */
function envRefuse(prefix: 'IMAP' | 'LDAP'): Refuse {
  return (field, message) => {
    throw new ConfigError(`${prefix}_${field.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`, message);
  };
}

/** The IMAP server of the IMAP_* settings (contract §5); its rules are backend-settings.ts's. */
function imapFromEnvironment(s: CleanedSettings): ConfiguredImap {
  return imapSettings(
    {
      host: s.IMAP_HOST,
      port: s.IMAP_PORT,
      security: s.IMAP_SECURITY,
      allowPlaintext: s.IMAP_ALLOW_PLAINTEXT,
      caFile: s.IMAP_CA_FILE,
      timeoutMs: s.IMAP_TIMEOUT_MS,
      maxConcurrency: s.IMAP_MAX_CONCURRENCY,
      queueLimit: s.IMAP_QUEUE_LIMIT,
      forwardClientIp: s.IMAP_FORWARD_CLIENT_IP,
    },
    envRefuse('IMAP'),
  );
}

/** The directory of the LDAP_* settings (contract §8). */
function ldapFromEnvironment(s: CleanedSettings): LdapSettings {
  return ldapSettings(
    {
      url: s.LDAP_URL,
      security: s.LDAP_SECURITY,
      allowPlaintext: s.LDAP_ALLOW_PLAINTEXT,
      caFile: s.LDAP_CA_FILE,
      userDn: s.LDAP_USER_DN,
      bindDn: s.LDAP_BIND_DN,
      bindPassword: s.LDAP_BIND_PASSWORD,
      baseDn: s.LDAP_BASE_DN,
      userFilter: s.LDAP_USER_FILTER,
      timeoutMs: s.LDAP_TIMEOUT_MS,
      maxConcurrency: s.LDAP_MAX_CONCURRENCY,
      queueLimit: s.LDAP_QUEUE_LIMIT,
    },
    envRefuse('LDAP'),
  );
}

/** The backend specs of the environment settings, in AUTH_BACKENDS order. */
function backendsFromEnvironment(s: CleanedSettings, imap: ConfiguredImap): ConfiguredBackend[] {
  return s.AUTH_BACKENDS.map(
    (kind): ConfiguredBackend =>
      kind === 'imap'
        ? { kind, name: 'imap', domains: null, imap }
        : { kind, name: 'ldap', domains: null, ldap: ldapFromEnvironment(s) },
  );
}

const syncLimits = (s: CleanedSettings) => ({
  timeoutMs: s.GROUP_SYNC_TIMEOUT_MS,
  pageSize: s.GROUP_SYNC_PAGE_SIZE,
});

/** The group sync of the LDAP_GROUP_* settings over the LDAP_* directory, or null (§11). */
function groupSyncFromEnvironment(s: CleanedSettings) {
  if (s.LDAP_GROUP_BASE_DN === undefined) return null;
  const directory = groupSyncSettings(
    {
      baseDn: s.LDAP_GROUP_BASE_DN,
      filter: s.LDAP_GROUP_FILTER,
      classroomFilter: s.LDAP_GROUP_CLASSROOM_FILTER,
      usernameAttribute: s.LDAP_USERNAME_ATTRIBUTE,
      idAttribute: s.LDAP_GROUP_ID_ATTRIBUTE,
      shortDescriptionAttribute: s.LDAP_GROUP_SHORT_DESCRIPTION_ATTRIBUTE,
      activitiesAttribute: s.LDAP_GROUP_ACTIVITIES_ATTRIBUTE,
    },
    ldapFromEnvironment(s),
    syncLimits(s),
    envRefuse('LDAP'),
  );
  return { backend: 'ldap', directory };
}

type CleanedSettings = ReturnType<typeof cleanSettings>;
// Only for its type: what customCleanEnv returns for SETTINGS.
const cleanSettings = (env: Record<string, string>) => customCleanEnv(env, SETTINGS, (cleaned) => cleaned);

/** Parses and validates every setting; throws `ConfigError` naming the first bad variable. */
export function loadConfig(env: Env): Config {
  const s = parseSettings(env);
  const storeSettings: StoreSettings = {
    databaseUrl: s.DATABASE_URL,
    databaseCaFile: s.DATABASE_CA_FILE ?? null,
    databaseTransactionPooler: s.DATABASE_TRANSACTION_POOLER,
    sessionStore: s.SESSION_STORE ?? null,
    redisCaFile: s.REDIS_CA_FILE ?? null,
    redisKeyPrefix: s.REDIS_KEY_PREFIX,
    sqliteBusyTimeoutMs: s.SQLITE_BUSY_TIMEOUT_MS,
  };
  const store = storeOptions(storeSettings);
  if (s.HEADERS_TIMEOUT_MS > s.REQUEST_TIMEOUT_MS) {
    throw new ConfigError(
      'HEADERS_TIMEOUT_MS',
      'must not exceed REQUEST_TIMEOUT_MS (the headers are part of the request)',
    );
  }
  // The environment's IMAP server is checked when IMAP is listed, or when nothing else is (the CLI).
  const imap = imapFromEnvironment(s);
  const configFile = s.AUTH_CONFIG ?? null;
  const file = configFile === null ? null : readAuthConfig(configFile, syncLimits(s), s.PUBLIC_URL ?? null);
  const groupSync = file === null ? groupSyncFromEnvironment(s) : file.groupSync;
  if (groupSync === null && s.GROUP_SYNC_INTERVAL !== undefined)
    throw new ConfigError(
      'GROUP_SYNC_INTERVAL',
      'needs a directory to sync from: LDAP_GROUP_BASE_DN (or a groups object in AUTH_CONFIG)',
    );
  const config: Config = {
    host: s.HOST,
    port: s.PORT,
    workers: s.WORKERS,
    ...storeSettings,
    store,
    imap,
    auth: {
      backends: file === null ? backendsFromEnvironment(s, imap) : file.backends,
      providers: file === null ? [] : file.providers,
      configFile,
    },
    publicUrl: s.PUBLIC_URL ?? null,
    http: {
      cookieSecure: s.COOKIE_SECURE,
      trustedOrigins: s.TRUSTED_ORIGINS,
      allowedHosts: s.ALLOWED_HOSTS ?? null,
      trustProxy: s.TRUST_PROXY,
      accessLog: s.ACCESS_LOG,
      headersTimeoutMs: s.HEADERS_TIMEOUT_MS,
      requestTimeoutMs: s.REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: s.KEEP_ALIVE_TIMEOUT_MS,
    },
    logLevel: s.LOG_LEVEL,
    usernameCase: s.USERNAME_CASE,
    allowNewUsers: s.ALLOW_NEW_USERS,
    throttle: {
      userFailures: s.THROTTLE_USER_FAILURES,
      ipFailures: s.THROTTLE_IP_FAILURES,
      windowSeconds: s.THROTTLE_WINDOW_SECONDS,
      ipv6PrefixLength: s.THROTTLE_IPV6_PREFIX,
    },
    authFailureDelayMs: s.AUTH_FAILURE_DELAY_MS,
    secretKey: s.SECRET_KEY ?? null,
    metricsPort: s.METRICS_PORT ?? null,
    shutdownGraceMs: s.SHUTDOWN_GRACE_MS,
    groupSync: groupSync === null ? null : { ...groupSync, intervalMs: s.GROUP_SYNC_INTERVAL ?? null },
    settings: s,
  };
  return deepFreeze(config);
}

function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) {
    if (inner !== null && typeof inner === 'object') deepFreeze(inner);
  }
  return Object.freeze(value);
}
