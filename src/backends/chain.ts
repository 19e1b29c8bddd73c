// The chain of backends (contract §8): asked in order, the first success logs in. `bad_credentials`
// asks the next; so does an outage, and if nobody succeeds the attempt keeps the first outage class,
// so an outage locks nobody out (only `bad_credentials` counts toward the throttle, §3). A backend
// restricted to domains is asked only for `local@domain` usernames of its domains; a username no
// backend serves is refused without contacting any, after as long as a refusal usually takes (§3).
import { cachedProbe } from '../imap-probe.ts';
import type { Authenticator, Backend, GuardStats, VerifyResult } from './authenticator.ts';

/** How many recent refusals the timing of an unserved username follows. */
const REFUSAL_SAMPLES = 32;

/** The domain part of `local@domain`, lower-cased; null without exactly one `@`. */
export function mailDomain(username: string): string | null {
  const at = username.indexOf('@');
  if (at <= 0 || at !== username.lastIndexOf('@') || at === username.length - 1) return null;
  return username.slice(at + 1).toLowerCase();
}

/** The backends that serve `username`, in order. */
export function backendsFor(backends: readonly Backend[], username: string): Backend[] {
  const domain = mailDomain(username);
  return backends.filter(
    (backend) => backend.domains === null || (domain !== null && backend.domains.includes(domain)),
  );
}

/** Recent durations of refused passwords; their median is how long an unserved username waits. */
class RefusalTiming {
  readonly #samples: number[] = [];
  readonly #fallbackMs: number;

  constructor(fallbackMs: number) {
    this.#fallbackMs = fallbackMs;
  }

  record(ms: number): void {
    this.#samples.push(ms);
    if (this.#samples.length > REFUSAL_SAMPLES) this.#samples.shift();
  }

  typicalMs(): number {
    if (this.#samples.length === 0) return this.#fallbackMs;
    const sorted = [...this.#samples].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] ?? this.#fallbackMs;
  }
}

export interface ChainOptions {
  /** How long a readiness answer is reused (contract §6: probes cannot hammer a backend). */
  readonly probeTtlMs: number;
  /** Wait for an unserved username before any refusal has been timed. */
  readonly fallbackRefusalMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** One Authenticator over ordered backends. */
export function createChain(backends: readonly Backend[], options: ChainOptions): Authenticator {
  const timing = new RefusalTiming(options.fallbackRefusalMs ?? 50);
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const probes = backends.map((backend) => ({
    name: backend.name,
    probe: cachedProbe(() => backend.probe(), options.probeTtlMs),
  }));

  return {
    async verify(username, password, clientIp): Promise<VerifyResult> {
      const serving = backendsFor(backends, username);
      if (serving.length === 0) {
        // contract §3/§8: no backend is contacted, yet the refusal takes as long as a wrong password.
        await sleep(timing.typicalMs());
        return { ok: false, failure: 'bad_credentials', reason: 'no backend serves this username' };
      }
      let firstOutage: VerifyResult | null = null;
      let last: VerifyResult | null = null;
      for (const backend of serving) {
        const started = performance.now();
        const result = { ...(await backend.verify(username, password, clientIp)), backend: backend.name };
        if (result.ok) return result;
        if (result.failure === 'bad_credentials') timing.record(performance.now() - started);
        else firstOutage ??= result;
        last = result;
      }
      // contract §8: an outage anywhere outranks the refusals, so nobody is locked out by it.
      return firstOutage ?? (last as VerifyResult);
    },
    stats(): GuardStats {
      const all = backends.map((backend) => backend.stats());
      const rank = ['closed', 'half_open', 'open'];
      return {
        active: all.reduce((sum, s) => sum + s.active, 0),
        queued: all.reduce((sum, s) => sum + s.queued, 0),
        breaker: all.reduce(
          (worst, s) => (rank.indexOf(s.breaker) > rank.indexOf(worst) ? s.breaker : worst),
          'closed',
        ),
      };
    },
    async readiness() {
      const answers = await Promise.all(
        probes.map(async ({ name, probe }) => {
          const result = await probe.check();
          return [name, result.ok ? 'ok' : result.reason] as const;
        }),
      );
      return Object.fromEntries(answers);
    },
    async close() {
      await Promise.all(backends.map((backend) => backend.close()));
    },
  };
}
