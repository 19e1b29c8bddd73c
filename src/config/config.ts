// Settings (contract §6): parsed once, validated, frozen. Nothing else reads process.env.
import type { ThrottleSettings } from '../auth/throttle.ts';
import type { OidcSettings } from '../backends/oidc/settings.ts';
import type { RemovalLimit } from '../groups/sync/removal-guard.ts';
import type { EdgeOptions } from '../http/edge.ts';
import type { StoreOptions } from '../store/options.ts';
import { readAuthConfig } from './backends/auth-config.ts';
import type { ConfiguredBackend } from './backends/chain.ts';
import {
  backendsFromEnvironment,
  groupSyncFromEnvironment,
  imapFromEnvironment,
  syncLimits,
} from './backends/environment.ts';
import { type GroupSyncConfig, parseRemovalLimit } from './backends/group-sync.ts';
import type { ConfiguredImap } from './backends/imap.ts';
import { type CleanedSettings, type Env, parseSettings, settingFiles } from './environment.ts';
import { ConfigError } from './error.ts';
import { type PasskeyConfig, passkeyConfig } from './passkeys.ts';
import type { LogLevel, SettingName, UsernameCase } from './settings.ts';
import { type StoreSettings, storeOptions } from './stores/settings.ts';

export { environmentWithDotenv } from './environment.ts';
export { ConfigError } from './error.ts';
export type { LogLevel } from './settings.ts';

/** What the HTTP layer is configured with: the edge's settings and COOKIE_SECURE. */
type HttpSettings = Omit<EdgeOptions, 'logger' | 'metrics' | 'freshness'> & {
  readonly cookieSecure: boolean;
};

export interface Config extends StoreSettings {
  readonly host: string;
  readonly port: number;
  readonly workers: number;
  /** What the stores are opened with (stores/settings.ts decides the rules of the settings above). */
  readonly store: StoreOptions;
  /** From the IMAP_* settings; `host` null when unset (the admin CLI runs without it). */
  readonly imap: ConfiguredImap;
  /**
   * The backends asked, in order (contract §8); from AUTH_BACKENDS or the AUTH_CONFIG file. Serving
   * takes them through servingBackends (backends/chain.ts), which requires every IMAP host.
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
  /** contract §12: passkeys, on or off (and why off), from PASSKEYS and PUBLIC_URL. */
  readonly passkeys: PasskeyConfig;
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
  /** The secrets read from a file (`NAME_FILE`), by setting: `config check` says where each came from. */
  readonly settingFiles: Partial<Record<SettingName, string>>;
}

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
    passkeys: passkeyConfig(s.PASSKEYS, s.PUBLIC_URL ?? null, s.PASSKEY_ORIGINS, s.PASSKEYS_RETIRE_PASSWORD),
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
    groupSync:
      groupSync === null
        ? null
        : {
            ...groupSync,
            intervalMs: s.GROUP_SYNC_INTERVAL ?? null,
            maxRemovals: removalLimitOf(s.GROUP_SYNC_MAX_REMOVALS),
          },
    settings: s,
    settingFiles: settingFiles(env),
  };
  return deepFreeze(config);
}

/** GROUP_SYNC_MAX_REMOVALS as the sync takes it (the table's parser has accepted the text already). */
function removalLimitOf(text: string): RemovalLimit {
  const limit = parseRemovalLimit(text);
  if (limit === null) throw new ConfigError('GROUP_SYNC_MAX_REMOVALS', `cannot read "${text}"`);
  return limit;
}

function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) {
    if (inner !== null && typeof inner === 'object') deepFreeze(inner);
  }
  return Object.freeze(value);
}
