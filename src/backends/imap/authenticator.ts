// Verifies a username and password by logging in to the IMAP server (contract §5), behind the guard
// every backend shares (backends/guard.ts); the wire protocol is in client.ts.
// Knows nothing of sessions or HTTP: it answers "ok" or a classified failure.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { type Config, requireImapHost } from '../../config/config.ts';
import type { VerifyResult } from '../authenticator.ts';
import type { CircuitBreaker } from '../breaker.ts';
import { type Guarded, guardAttempts } from '../guard.ts';
import { RefusalTiming } from '../refusal-timing.ts';
import { verifyImapLogin } from './client.ts';
import { classifyImapError } from './lines.ts';

// The authenticator seam moved to backends/authenticator.ts (contract §8); re-exported for callers.
export type { Authenticator, LoginFailure, VerifyResult } from '../authenticator.ts';

export interface ImapSettings {
  readonly host: string;
  readonly port: number;
  readonly security: Config['imap']['security'];
  readonly caFile: string | null;
  readonly timeoutMs: number;
  readonly maxConcurrency: number;
  readonly queueLimit: number;
  readonly forwardClientIp: boolean;
}

/** The IMAP options of the settings; throws when IMAP_HOST is unset (serving needs it). */
export function imapSettings(config: Config): ImapSettings {
  return { ...config.imap, host: requireImapHost(config) };
}

export interface ImapTlsOptions {
  readonly rejectUnauthorized: true;
  readonly minVersion: 'TLSv1.2';
  /** Built once: a context per connection would parse every root certificate per login (~1 MB each). */
  readonly secureContext: SecureContext;
  servername?: string;
}

/** TLS options for the IMAP connection: verification always on, IMAP_CA_FILE added to the system roots. */
export function imapTlsOptions(settings: ImapSettings): ImapTlsOptions {
  const ca = [...rootCertificates];
  if (settings.caFile !== null) ca.push(readFileSync(settings.caFile, 'utf8'));
  const options: ImapTlsOptions = {
    rejectUnauthorized: true,
    minVersion: 'TLSv1.2',
    secureContext: createSecureContext({ ca, minVersion: 'TLSv1.2' }),
  };
  if (isIP(settings.host) === 0) options.servername = settings.host;
  return options;
}

/** Waited for a refusal until a first wrong password has been refused: Dovecot's default auth_failure_delay. */
export const IMAP_REFUSAL_SEED_MS = 2000;

/** The seams of the IMAP authenticator; production uses the defaults, tests script them. */
export interface ImapAuthenticatorOptions {
  /** One login against the server (default: the real client). */
  readonly login?: typeof verifyImapLogin;
  readonly breaker?: CircuitBreaker;
  /** Told the result and duration of every attempt that reached the server (metrics). */
  readonly observe?: (result: VerifyResult, seconds: number) => void;
  /** Durations of recent refused passwords (contract §3); default seeded with IMAP_REFUSAL_SEED_MS. */
  readonly timing?: RefusalTiming;
  /** The clock the guard reads durations from (default `performance.now`). */
  readonly now?: () => number;
}

/**
 * The IMAP authenticator: concurrency cap with a bounded queue, single-flight for identical
 * concurrent attempts, and a circuit breaker after repeated `upstream_unavailable` (the shared guard).
 */
export function createImapAuthenticator(
  settings: ImapSettings,
  options: ImapAuthenticatorOptions = {},
): Guarded {
  const login = options.login ?? verifyImapLogin;
  const tls = imapTlsOptions(settings);
  return guardAttempts((username, password, clientIp) => login(settings, tls, username, password, clientIp), {
    label: 'IMAP',
    maxConcurrency: settings.maxConcurrency,
    queueLimit: settings.queueLimit,
    timeoutMs: settings.timeoutMs,
    breaker: options.breaker,
    observe: options.observe,
    classify: classifyImapError,
    timing: options.timing ?? new RefusalTiming(IMAP_REFUSAL_SEED_MS),
    now: options.now,
  });
}
