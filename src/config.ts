// Settings (contract §6): parsed once, validated, frozen. Nothing else reads process.env.
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parse as parseDotenv } from 'dotenv';

export type ImapSecurity = 'tls' | 'starttls' | 'plain';
export type UsernameCase = 'lower' | 'preserve';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export type TrustProxy = boolean | number | string[];

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly workers: number;
  readonly databaseUrl: string;
  /** `null`: sessions and throttle counters live in the database. */
  readonly sessionStore: string | null;
  /** Prefix of every Redis key (several services, or several clubhouses, may share one Redis). */
  readonly redisKeyPrefix: string;
  /** How long a SQLite statement waits for another process's write lock before answering 503. */
  readonly sqliteBusyTimeoutMs: number;
  readonly imap: {
    /** `null` when unset: the admin CLI runs without it, serving refuses to start. */
    readonly host: string | null;
    readonly port: number;
    readonly security: ImapSecurity;
    readonly allowPlaintext: boolean;
    readonly caFile: string | null;
    readonly timeoutMs: number;
    readonly maxConcurrency: number;
    readonly queueLimit: number;
    readonly forwardClientIp: boolean;
  };
  readonly cookieSecure: boolean;
  readonly trustedOrigins: readonly string[];
  readonly trustProxy: TrustProxy;
  readonly logLevel: LogLevel;
  readonly usernameCase: UsernameCase;
  readonly allowNewUsers: boolean;
  readonly throttle: {
    readonly userFailures: number;
    readonly ipFailures: number;
    readonly windowSeconds: number;
  };
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
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.variable = variable;
  }
}

type Env = Readonly<Record<string, string | undefined>>;

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Reads `.env` (when present) under the real environment: a variable set in the environment wins. */
export function environmentWithDotenv(env: Env = process.env, dotenvPath = '.env'): Env {
  if (!existsSync(dotenvPath)) return env;
  const fromFile = parseDotenv(readFileSync(dotenvPath));
  return { ...fromFile, ...env };
}

/** Parses and validates every setting; throws `ConfigError` naming the first bad variable. */
export function loadConfig(env: Env): Config {
  const read = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === '' ? undefined : value;
  };
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = read(name);
    if (raw === undefined) return fallback;
    if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      throw new ConfigError(name, `expected a whole number from ${min} to ${max}, got "${raw}"`);
    }
    return Number(raw);
  };
  const boolean = (name: string, fallback: boolean): boolean => {
    const raw = read(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['true', '1', 'yes', 'on'].includes(raw)) return true;
    if (['false', '0', 'no', 'off'].includes(raw)) return false;
    throw new ConfigError(name, `expected true or false, got "${raw}"`);
  };
  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const raw = read(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    const found = allowed.find((value) => value === raw);
    if (found === undefined)
      throw new ConfigError(name, `expected one of ${allowed.join(', ')}, got "${raw}"`);
    return found;
  };

  const databaseUrl = read('DATABASE_URL') ?? 'sqlite:data/clubhouse.db';
  if (!/^(sqlite:.+|postgres(ql)?:\/\/.+)$/.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'expected sqlite:PATH or postgres://…');
  }
  const sessionStore = read('SESSION_STORE') ?? null;
  if (sessionStore !== null && !/^rediss?:\/\/.+/.test(sessionStore)) {
    throw new ConfigError(
      'SESSION_STORE',
      'expected redis://… (or leave unset to keep sessions in the database)',
    );
  }

  const imapHost = read('IMAP_HOST') ?? null;
  const security = oneOf<ImapSecurity>('IMAP_SECURITY', ['tls', 'starttls', 'plain'], 'tls');
  const allowPlaintext = boolean('IMAP_ALLOW_PLAINTEXT', false);
  // contract §6: a password in clear over the network is a misconfiguration unless asked for by name.
  if (security === 'plain' && imapHost !== null && !isLoopbackHost(imapHost) && !allowPlaintext) {
    throw new ConfigError(
      'IMAP_SECURITY',
      `plain sends passwords in clear; allowed only to a loopback host, or with IMAP_ALLOW_PLAINTEXT=true (IMAP_HOST is "${imapHost}")`,
    );
  }
  const forwardClientIp = boolean('IMAP_FORWARD_CLIENT_IP', false);
  // contract §5: the client's address travels only inside TLS (imap-client.ts sends ID after STARTTLS).
  if (forwardClientIp && security === 'plain') {
    throw new ConfigError(
      'IMAP_FORWARD_CLIENT_IP',
      'needs IMAP_SECURITY=tls or starttls (the ID command would travel in clear)',
    );
  }
  const caFile = read('IMAP_CA_FILE') ?? null;
  if (caFile !== null && !existsSync(caFile))
    throw new ConfigError('IMAP_CA_FILE', `no such file "${caFile}"`);
  const defaultImapPort = security === 'tls' ? 993 : 143;

  const metricsPort = read('METRICS_PORT') === undefined ? null : integer('METRICS_PORT', 0, 1, 65535);

  const config: Config = {
    host: read('HOST') ?? '127.0.0.1',
    port: integer('PORT', 8000, 0, 65535),
    workers: integer('WORKERS', 1, 1, 64),
    databaseUrl,
    sessionStore,
    redisKeyPrefix: read('REDIS_KEY_PREFIX') ?? 'clubhouse:',
    sqliteBusyTimeoutMs: integer('SQLITE_BUSY_TIMEOUT_MS', 5000, 0, 60_000),
    imap: {
      host: imapHost,
      port: integer('IMAP_PORT', defaultImapPort, 1, 65535),
      security,
      allowPlaintext,
      caFile,
      timeoutMs: integer('IMAP_TIMEOUT_MS', 5000, 100, 120_000),
      maxConcurrency: integer('IMAP_MAX_CONCURRENCY', 32, 1, 1024),
      queueLimit: integer('IMAP_QUEUE_LIMIT', 1000, 0, 100_000),
      forwardClientIp,
    },
    cookieSecure: boolean('COOKIE_SECURE', false),
    trustedOrigins: parseTrustedOrigins(read('TRUSTED_ORIGINS')),
    trustProxy: parseTrustProxy(read('TRUST_PROXY')),
    logLevel: oneOf<LogLevel>('LOG_LEVEL', LOG_LEVELS, 'info'),
    usernameCase: oneOf<UsernameCase>('USERNAME_CASE', ['lower', 'preserve'], 'lower'),
    allowNewUsers: boolean('ALLOW_NEW_USERS', true),
    throttle: {
      userFailures: integer('THROTTLE_USER_FAILURES', 5, 1, 1_000_000),
      ipFailures: integer('THROTTLE_IP_FAILURES', 50, 1, 1_000_000),
      windowSeconds: integer('THROTTLE_WINDOW_SECONDS', 900, 1, 86_400),
    },
    secretKey: read('SECRET_KEY') ?? null,
    metricsPort,
    shutdownGraceMs: integer('SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    http: {
      headersTimeoutMs: integer('HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
      requestTimeoutMs: integer('REQUEST_TIMEOUT_MS', 30_000, 100, 600_000),
      keepAliveTimeoutMs: integer('KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, 600_000),
    },
  };
  if (config.http.headersTimeoutMs > config.http.requestTimeoutMs) {
    throw new ConfigError(
      'HEADERS_TIMEOUT_MS',
      'must not exceed REQUEST_TIMEOUT_MS (the headers are part of the request)',
    );
  }
  if (config.secretKey !== null && config.secretKey.length < 32) {
    throw new ConfigError('SECRET_KEY', 'expected at least 32 characters');
  }
  return deepFreeze(config);
}

function parseTrustedOrigins(raw: string | undefined): string[] {
  if (raw === undefined) return [];
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
    .map((item) => {
      let url: URL;
      try {
        url = new URL(item);
      } catch {
        throw new ConfigError('TRUSTED_ORIGINS', `"${item}" is not an origin like https://example.org`);
      }
      if (!['http:', 'https:'].includes(url.protocol) || url.origin !== item.replace(/\/$/, '')) {
        throw new ConfigError('TRUSTED_ORIGINS', `"${item}" is not an origin like https://example.org`);
      }
      return url.origin;
    });
}

function parseTrustProxy(raw: string | undefined): TrustProxy {
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^[0-9]+$/.test(raw)) return Number(raw);
  const entries = raw.split(',').map((item) => item.trim());
  for (const entry of entries) {
    const [address, prefix] = entry.split('/');
    const family = isIP(address ?? '');
    const prefixOk =
      prefix === undefined || (/^[0-9]+$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (family === 0 || !prefixOk) {
      throw new ConfigError(
        'TRUST_PROXY',
        `expected false, true, a hop count, or addresses/CIDRs, got "${entry}"`,
      );
    }
  }
  return entries;
}

/** True for names and addresses that cannot leave this machine. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  return bare === 'localhost' || bare === '::1' || /^127(\.[0-9]{1,3}){3}$/.test(bare);
}

function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) {
    if (inner !== null && typeof inner === 'object') deepFreeze(inner);
  }
  return Object.freeze(value);
}
