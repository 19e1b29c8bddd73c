// Settings (contract §6): parsed once, validated, frozen. Nothing else reads process.env.
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseDotenv } from 'dotenv';
import { customCleanEnv } from 'envalid';
import {
  type BackendSpec,
  type ImapSpecSettings,
  ldapSettings,
  type RawLdap,
  readAuthConfig,
} from '../backends/auth-config.ts';
import { ConfigError, isLoopbackHost } from './error.ts';
import { parsePostgresTls } from './postgres-url.ts';
import { parseRedisTarget } from './redis-url.ts';
import { type LogLevel, SETTINGS, type TrustProxy, type UsernameCase } from './settings.ts';

export { ConfigError, isLoopbackHost } from './error.ts';
export type { ImapSecurity, LogLevel, TrustProxy, UsernameCase } from './settings.ts';

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly workers: number;
  readonly databaseUrl: string;
  /** CA that PostgreSQL's certificate must chain to (implies sslmode=verify-full); null: none. */
  readonly databaseCaFile: string | null;
  /** A transaction-mode pooler (PgBouncer) sits between: no startup timeouts, no named statements. */
  readonly databaseTransactionPooler: boolean;
  /** `null`: sessions and throttle counters live in the database. */
  readonly sessionStore: string | null;
  /** CA that Redis's certificate must chain to (rediss:// only); null: the system's roots. */
  readonly redisCaFile: string | null;
  /** Prefix of every Redis key (several services, or several clubhouses, may share one Redis). */
  readonly redisKeyPrefix: string;
  /** How long a SQLite statement waits for another process's write lock before answering 503. */
  readonly sqliteBusyTimeoutMs: number;
  /** From the IMAP_* settings; `host` null when unset (the admin CLI runs without it). */
  readonly imap: ImapSpecSettings;
  /** The backends asked, in order (contract §8); from AUTH_BACKENDS or the AUTH_CONFIG file. */
  readonly auth: {
    readonly backends: readonly BackendSpec[];
    /** The AUTH_CONFIG file, or null when the environment settings describe the backends. */
    readonly configFile: string | null;
  };
  readonly cookieSecure: boolean;
  readonly trustedOrigins: readonly string[];
  /** contract §7: the Host names served (Django's ALLOWED_HOSTS, lower-cased); `null`: any Host. */
  readonly allowedHosts: readonly string[] | null;
  readonly trustProxy: TrustProxy;
  readonly logLevel: LogLevel;
  /** One log line per request (ACCESS_LOG); logins and errors are logged either way. */
  readonly accessLog: boolean;
  readonly usernameCase: UsernameCase;
  readonly allowNewUsers: boolean;
  readonly throttle: {
    readonly userFailures: number;
    readonly ipFailures: number;
    readonly windowSeconds: number;
    /** contract §3: an IPv6 client is keyed by its network of this prefix length. */
    readonly ipv6PrefixLength: number;
  };
  /** contract §3: a refused login is answered no sooner than this after it began. */
  readonly authFailureDelayMs: number;
  /** Keys the throttle's password fingerprints; `null`: a random key kept in the database. */
  readonly secretKey: string | null;
  readonly metricsPort: number | null;
  readonly shutdownGraceMs: number;
  /** Server timeouts against slow clients (slowloris): headers, whole request, idle keep-alive. */
  readonly http: {
    readonly headersTimeoutMs: number;
    readonly requestTimeoutMs: number;
    readonly keepAliveTimeoutMs: number;
  };
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
export function parseSettings(env: Env): CleanedSettings {
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
  const listed = (env['AUTH_BACKENDS']?.trim() || 'imap').split(',').map((item) => item.trim().toLowerCase());
  return listed.includes(kind);
}

/** The backend specs of the environment settings, in AUTH_BACKENDS order. */
function backendsFromEnvironment(s: CleanedSettings, imap: Config['imap']): BackendSpec[] {
  return s.AUTH_BACKENDS.map((kind): BackendSpec => {
    if (kind === 'imap') return { kind, name: 'imap', domains: null, imap };
    const raw: RawLdap = {
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
    };
    // `bindPassword` → LDAP_BIND_PASSWORD: the error names the variable the operator set.
    const refuse = (field: string, message: string): never => {
      throw new ConfigError(`LDAP_${field.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`, message);
    };
    return { kind, name: 'ldap', domains: null, ldap: ldapSettings(raw, refuse) };
  });
}

export type CleanedSettings = ReturnType<typeof cleanSettings>;
// Only for its type: what customCleanEnv returns for SETTINGS.
const cleanSettings = (env: Record<string, string>) => customCleanEnv(env, SETTINGS, (cleaned) => cleaned);

/** Parses and validates every setting; throws `ConfigError` naming the first bad variable. */
export function loadConfig(env: Env): Config {
  const s = parseSettings(env);
  const databaseCaFile = s.DATABASE_CA_FILE ?? null;
  if (s.DATABASE_URL.startsWith('postgres')) {
    // issue 17: TLS asked for is never downgraded; unverified TLS only by name (sslmode=require).
    const tls = parsePostgresTls(s.DATABASE_URL, databaseCaFile);
    if (!tls.ok) throw new ConfigError(tls.variable, tls.message);
    if (tls.tls.caFile !== null && !existsSync(tls.tls.caFile))
      throw new ConfigError('DATABASE_URL', `sslrootcert: no such file "${tls.tls.caFile}"`);
  } else if (databaseCaFile !== null || s.DATABASE_TRANSACTION_POOLER) {
    throw new ConfigError(
      databaseCaFile !== null ? 'DATABASE_CA_FILE' : 'DATABASE_TRANSACTION_POOLER',
      'applies to a postgres:// DATABASE_URL only',
    );
  }
  const redisCaFile = s.REDIS_CA_FILE ?? null;
  if (s.SESSION_STORE !== undefined) {
    const target = parseRedisTarget(s.SESSION_STORE, redisCaFile);
    if (!target.ok) throw new ConfigError(target.variable, target.message);
  } else if (redisCaFile !== null) {
    throw new ConfigError('REDIS_CA_FILE', 'needs a rediss:// SESSION_STORE');
  }
  const imapHost = s.IMAP_HOST ?? null;
  // contract §6: a password in clear over the network is a misconfiguration unless asked for by name.
  if (
    s.IMAP_SECURITY === 'plain' &&
    imapHost !== null &&
    !isLoopbackHost(imapHost) &&
    !s.IMAP_ALLOW_PLAINTEXT
  ) {
    throw new ConfigError(
      'IMAP_SECURITY',
      `plain sends passwords in clear; allowed only to a loopback host, or with IMAP_ALLOW_PLAINTEXT=true (IMAP_HOST is "${imapHost}")`,
    );
  }
  // contract §5: the client's address travels only inside TLS (backends/imap/client.ts sends ID after STARTTLS).
  if (s.IMAP_FORWARD_CLIENT_IP && s.IMAP_SECURITY === 'plain') {
    throw new ConfigError(
      'IMAP_FORWARD_CLIENT_IP',
      'needs IMAP_SECURITY=tls or starttls (the ID command would travel in clear)',
    );
  }
  if (s.HEADERS_TIMEOUT_MS > s.REQUEST_TIMEOUT_MS) {
    throw new ConfigError(
      'HEADERS_TIMEOUT_MS',
      'must not exceed REQUEST_TIMEOUT_MS (the headers are part of the request)',
    );
  }
  const imap: Config['imap'] = {
    host: imapHost,
    port: s.IMAP_PORT ?? (s.IMAP_SECURITY === 'tls' ? 993 : 143),
    security: s.IMAP_SECURITY,
    allowPlaintext: s.IMAP_ALLOW_PLAINTEXT,
    caFile: s.IMAP_CA_FILE ?? null,
    timeoutMs: s.IMAP_TIMEOUT_MS,
    maxConcurrency: s.IMAP_MAX_CONCURRENCY,
    queueLimit: s.IMAP_QUEUE_LIMIT,
    forwardClientIp: s.IMAP_FORWARD_CLIENT_IP,
  };
  const configFile = s.AUTH_CONFIG ?? null;
  const config: Config = {
    host: s.HOST,
    port: s.PORT,
    workers: s.WORKERS,
    databaseUrl: s.DATABASE_URL,
    databaseCaFile,
    databaseTransactionPooler: s.DATABASE_TRANSACTION_POOLER,
    sessionStore: s.SESSION_STORE ?? null,
    redisCaFile,
    redisKeyPrefix: s.REDIS_KEY_PREFIX,
    sqliteBusyTimeoutMs: s.SQLITE_BUSY_TIMEOUT_MS,
    imap,
    auth: {
      backends: configFile === null ? backendsFromEnvironment(s, imap) : readAuthConfig(configFile),
      configFile,
    },
    cookieSecure: s.COOKIE_SECURE,
    trustedOrigins: s.TRUSTED_ORIGINS,
    allowedHosts: s.ALLOWED_HOSTS ?? null,
    trustProxy: s.TRUST_PROXY,
    logLevel: s.LOG_LEVEL,
    accessLog: s.ACCESS_LOG,
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
    http: {
      headersTimeoutMs: s.HEADERS_TIMEOUT_MS,
      requestTimeoutMs: s.REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: s.KEEP_ALIVE_TIMEOUT_MS,
    },
    settings: s,
  };
  return deepFreeze(config);
}

/** The IMAP server's host name; serving needs it (the admin CLI does not). */
export function requireImapHost(config: Config): string {
  if (config.imap.host === null) {
    throw new ConfigError('IMAP_HOST', 'required: the IMAP server that checks passwords');
  }
  return config.imap.host;
}

function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) {
    if (inner !== null && typeof inner === 'object') deepFreeze(inner);
  }
  return Object.freeze(value);
}
