// Verifies a username and password by logging in to the IMAP server (contract §5): the guards
// around each login (cap, queue, single-flight, breaker); the wire protocol is in imap-client.ts.
// Knows nothing of sessions or HTTP: it answers "ok" or a classified failure.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { CircuitBreaker } from './breaker.ts';
import { type Config, requireImapHost } from './config.ts';
import { verifyImapLogin } from './imap-client.ts';
import { classifyImapError } from './imap-lines.ts';
import { Limiter, QueueFullError, QueueTimeoutError } from './limiter.ts';
import { RefusalTiming } from './refusal-timing.ts';

/** Why a login failed (contract §3); the client always sees one 403, the log and metrics see this. */
export type LoginFailure =
  | 'bad_credentials'
  | 'user_disabled'
  | 'user_not_allowed'
  | 'rejected_input'
  | 'upstream_unavailable'
  | 'upstream_misconfigured';

export type VerifyResult = { ok: true } | { ok: false; failure: LoginFailure; reason: string };

export interface Authenticator {
  verify(username: string, password: string, clientIp: string): Promise<VerifyResult>;
  /**
   * How long a refusal decided without asking this backend waits (contract §3: as long as its
   * refusal of a wrong password would take).
   */
  refusalDelayMs(): number;
  /** The longest one verify() can take: how long a guess may stay in flight (throttle.ts). */
  readonly maxVerifyMs: number;
  /** Counters for metrics and readiness. */
  stats(): { active: number; queued: number; breaker: string };
}

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

/** Stable key for single-flight: identical username and password share one IMAP login. */
function flightKey(username: string, password: string): string {
  return createHash('sha256').update(username).update('\0').update(password).digest('base64');
}

/**
 * The IMAP authenticator: concurrency cap with a bounded queue, single-flight for identical
 * concurrent attempts, and a circuit breaker after repeated `upstream_unavailable`.
 */
export function createImapAuthenticator(
  settings: ImapSettings,
  login: typeof verifyImapLogin = verifyImapLogin,
  breaker = new CircuitBreaker({ threshold: 5, openMs: 5000 }),
  /** Told the result and duration of every attempt that reached the server (metrics). */
  observe: (result: VerifyResult, seconds: number) => void = () => undefined,
  timing = new RefusalTiming(IMAP_REFUSAL_SEED_MS),
): Authenticator {
  const tls = imapTlsOptions(settings);
  const limiter = new Limiter(settings.maxConcurrency, settings.queueLimit);
  const inFlight = new Map<string, Promise<VerifyResult>>();

  const attempt = async (username: string, password: string, clientIp: string): Promise<VerifyResult> => {
    if (!breaker.tryAcquire()) {
      return { ok: false, failure: 'upstream_unavailable', reason: 'circuit open' };
    }
    let outcome: 'up' | 'down' | 'neutral' = 'neutral';
    try {
      const result = await limiter.run(async () => {
        const started = performance.now();
        const answer = await login(settings, tls, username, password, clientIp);
        observe(answer, (performance.now() - started) / 1000);
        return answer;
      }, settings.timeoutMs);
      outcome = !result.ok && result.failure === 'upstream_unavailable' ? 'down' : 'up';
      return result;
    } catch (err) {
      if (err instanceof QueueFullError || err instanceof QueueTimeoutError) {
        // Our own overload, not the server's: a failure for this attempt, but no verdict on the server.
        return { ok: false, failure: 'upstream_unavailable', reason: err.message };
      }
      const classified = classifyImapError(err);
      outcome = classified.failure === 'upstream_unavailable' ? 'down' : 'up';
      return { ok: false, ...classified };
    } finally {
      breaker.record(outcome);
    }
  };

  return {
    verify(username, password, clientIp) {
      const key = flightKey(username, password);
      const running = inFlight.get(key);
      if (running !== undefined) return running;
      const started = performance.now();
      const promise = attempt(username, password, clientIp)
        .then((result) => {
          // contract §3: what a refusal decided without IMAP imitates, queue wait included.
          if (!result.ok && result.failure === 'bad_credentials') timing.record(performance.now() - started);
          return result;
        })
        .finally(() => inFlight.delete(key));
      inFlight.set(key, promise);
      return promise;
    },
    refusalDelayMs: () => timing.delayMs(),
    // A queue wait and a login, each within IMAP_TIMEOUT_MS (contract §5).
    maxVerifyMs: 2 * settings.timeoutMs,
    stats() {
      return { active: limiter.active, queued: limiter.queued, breaker: breaker.state };
    },
  };
}
