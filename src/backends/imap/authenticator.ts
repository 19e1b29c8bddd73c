// Verifies a username and password by logging in to the IMAP server (contract §5), behind the guard
// every backend shares (backends/guard.ts); the wire protocol is in client.ts.
// Knows nothing of sessions or HTTP: it answers "ok" or a classified failure.
import type { VerifyResult } from '../authenticator.ts';
import type { CircuitBreaker } from '../breaker.ts';
import { type Guarded, guardAttempts } from '../guard.ts';
import { RefusalTiming } from '../refusal-timing.ts';
import type { TlsOptions } from '../tls.ts';
import { verifyImapLogin } from './client.ts';
import { classifyImapError } from './lines.ts';
import type { ImapSettings } from './settings.ts';

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
 * `tls` is built once by the caller and shared with the readiness probe (backends/build.ts).
 */
export function createImapAuthenticator(
  settings: ImapSettings,
  tls: TlsOptions,
  options: ImapAuthenticatorOptions = {},
): Guarded {
  const login = options.login ?? verifyImapLogin;
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
