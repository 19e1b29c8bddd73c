// The IMAP backend (contract §5): a username and password verified by logging in to the IMAP server,
// behind the guard every backend shares (backends/guard.ts: cap, queue, single-flight, breaker), and
// a readiness probe without credentials over the same TLS options. The wire protocol is client.ts's.
// Knows nothing of sessions or HTTP: it answers "ok" or a classified failure.
import type { Backend, BackendObserver } from '../authenticator.ts';
import type { CircuitBreaker } from '../breaker.ts';
import { guardedBackend } from '../guard.ts';
import { RefusalTiming } from '../refusal-timing.ts';
import { backendTls } from '../tls.ts';
import { probeImapServer, verifyImapLogin } from './client.ts';
import { classifyImapError } from './lines.ts';
import type { ImapBackendSpec } from './settings.ts';

/** Waited for a refusal until a first wrong password has been refused: Dovecot's default auth_failure_delay. */
export const IMAP_REFUSAL_SEED_MS = 2000;

/** The seams of the IMAP backend; production uses the defaults, tests script them. */
export interface ImapSeams {
  /** One login against the server (default: the real client). */
  readonly login?: typeof verifyImapLogin;
  readonly breaker?: CircuitBreaker;
  /** Durations of recent refused passwords (contract §3); default seeded with IMAP_REFUSAL_SEED_MS. */
  readonly timing?: RefusalTiming;
  /** The clock the guard reads durations from (default `performance.now`). */
  readonly now?: () => number;
}

/**
 * The IMAP backend of `spec`: its logins guarded, its probe; the TLS options are built once and shared
 * by both. `observe` is told every attempt that reached the server (metrics).
 */
export function createImapBackend(
  spec: ImapBackendSpec,
  observe: BackendObserver = () => undefined,
  seams: ImapSeams = {},
): Backend {
  const settings = spec.imap;
  const tls = backendTls(settings.host, settings.caFile);
  const login = seams.login ?? verifyImapLogin;
  return guardedBackend(
    spec,
    (username, password, clientIp) => login(settings, tls, username, password, clientIp),
    {
      label: 'IMAP',
      maxConcurrency: settings.maxConcurrency,
      queueLimit: settings.queueLimit,
      timeoutMs: settings.timeoutMs,
      breaker: seams.breaker,
      observe,
      classify: classifyImapError,
      timing: seams.timing ?? new RefusalTiming(IMAP_REFUSAL_SEED_MS),
      now: seams.now,
    },
    () => probeImapServer(settings, tls),
  );
}
