// The protections every backend shares (contract §5, §8): a concurrency cap with a bounded queue,
// single-flight of identical concurrent attempts, and a circuit breaker that fails fast after
// repeated `upstream_unavailable`. One wrapper around any backend's single-attempt function, so
// IMAP and LDAP share the design instead of copies of it.
import type {
  Backend,
  BackendFailure,
  BackendKind,
  BackendObserver,
  GuardStats,
  ProbeResult,
  VerifyResult,
} from './authenticator.ts';
import { CircuitBreaker } from './breaker.ts';
import { Limiter, QueueFullError, QueueTimeoutError } from './limiter.ts';
import type { RefusalTiming } from './refusal-timing.ts';
import { SingleFlight } from './single-flight.ts';

/** One attempt against the server, with its own deadline; resolves, never hangs. */
export type AttemptOnce = (username: string, password: string, clientIp: string) => Promise<VerifyResult>;

export interface GuardOptions {
  /** Names the protocol in the reasons of our own overload ("LDAP queue full"). */
  readonly label: string;
  readonly maxConcurrency: number;
  readonly queueLimit: number;
  /** How long an attempt may wait for a slot (the backend's deadline). */
  readonly timeoutMs: number;
  readonly breaker?: CircuitBreaker;
  /** Told the result and duration of every attempt that reached the server (metrics). */
  readonly observe?: (result: VerifyResult, seconds: number) => void;
  /** Sorts an error the attempt threw into the failure classes. */
  readonly classify: (error: unknown) => { failure: BackendFailure; reason: string };
  /** Durations of recent refused passwords, which a refusal decided without the backend imitates (§3). */
  readonly timing: RefusalTiming;
  /**
   * The clock those durations and observe's are read from, in milliseconds (default
   * `performance.now`); a test's clock makes them exact, so no test has to measure one.
   */
  readonly now?: () => number;
}

interface Guarded {
  verify: AttemptOnce;
  refusalDelayMs(): number;
  readonly maxVerifyMs: number;
  stats(): GuardStats;
}

/** Wraps `once` in the cap, queue, single-flight and breaker. */
function guardAttempts(once: AttemptOnce, options: GuardOptions): Guarded {
  const breaker = options.breaker ?? new CircuitBreaker({ threshold: 5, openMs: 5000 });
  const observe = options.observe ?? (() => undefined);
  const now = options.now ?? (() => performance.now());
  const limiter = new Limiter(options.maxConcurrency, options.queueLimit);
  const identical = new SingleFlight<VerifyResult>();

  const attempt = async (username: string, password: string, clientIp: string): Promise<VerifyResult> => {
    if (!breaker.tryAcquire()) {
      return { ok: false, failure: 'upstream_unavailable', reason: 'circuit open' };
    }
    let outcome: 'up' | 'down' | 'neutral' = 'neutral';
    try {
      const result = await limiter.run(async () => {
        const started = now();
        const answer = await once(username, password, clientIp);
        observe(answer, (now() - started) / 1000);
        return answer;
      }, options.timeoutMs);
      outcome = !result.ok && result.failure === 'upstream_unavailable' ? 'down' : 'up';
      return result;
    } catch (err) {
      if (err instanceof QueueFullError || err instanceof QueueTimeoutError) {
        // Our own overload, not the server's: a failure for this attempt, but no verdict on the server.
        const reason =
          err instanceof QueueFullError
            ? `${options.label} queue full`
            : `waited too long for an ${options.label} slot`;
        return { ok: false, failure: 'upstream_unavailable', reason };
      }
      const classified = options.classify(err);
      outcome = classified.failure === 'upstream_unavailable' ? 'down' : 'up';
      return { ok: false, ...classified };
    } finally {
      breaker.record(outcome);
    }
  };

  return {
    verify(username, password, clientIp) {
      return identical.run(username, password, async () => {
        const started = now();
        const result = await attempt(username, password, clientIp);
        // contract §3: what a refusal decided without the backend imitates, queue wait included.
        if (!result.ok && result.failure === 'bad_credentials') options.timing.record(now() - started);
        return result;
      });
    },
    // contract §3: while the breaker is open or the queue full an attempt is refused at once, so a
    // refusal decided without the backend waits no more then either, as the backend path does not.
    refusalDelayMs: () => (breaker.failsFast || limiter.full ? 0 : options.timing.delayMs()),
    // A queue wait and an attempt, each within the backend's deadline (contract §5, §8).
    maxVerifyMs: 2 * options.timeoutMs,
    stats() {
      return { active: limiter.active, queued: limiter.queued, breaker: breaker.state };
    },
  };
}

/**
 * One backend of a kind (imap/backend.ts, ldap/backend.ts): `once` behind the guard, `observe` told
 * every attempt that reached the server, `probe` for readiness; nothing held between logins.
 */
export function guardedBackend(
  spec: { readonly name: string; readonly kind: BackendKind; readonly domains: readonly string[] | null },
  once: AttemptOnce,
  options: Omit<GuardOptions, 'observe'> & { readonly observe: BackendObserver },
  probe: () => Promise<ProbeResult>,
): Backend {
  const guarded = guardAttempts(once, {
    ...options,
    observe: (result, seconds) => options.observe(spec, result, seconds),
  });
  return {
    name: spec.name,
    kind: spec.kind,
    domains: spec.domains,
    ...guarded,
    probe,
    close: async () => undefined,
  };
}
