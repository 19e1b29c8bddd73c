// The chain of backends (contract §8): asked in order, the first success logs in. `bad_credentials`
// asks the next; so does an outage, and if nobody succeeds the attempt keeps the first outage class,
// so an outage locks nobody out (only `bad_credentials` counts toward the throttle, §3). A backend
// restricted to domains is asked only for `local@domain` usernames of its domains; a username no
// backend serves is refused without contacting any, after as long as a refusal usually takes (§3).

import type { Authenticator, Backend, GuardStats, VerifyResult } from './authenticator.ts';
import { cachedProbe } from './imap/probe.ts';
import { RefusalTiming } from './refusal-timing.ts';

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

export interface ChainOptions {
  /** How long a readiness answer is reused (contract §6: probes cannot hammer a backend). */
  readonly probeTtlMs: number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** The clock a refusal through the chain is timed with, in ms (default `performance.now`). */
  readonly now?: () => number;
}

/** One Authenticator over ordered backends. */
export function createChain(backends: readonly Backend[], options: ChainOptions): Authenticator {
  // A refused password through the chain, timed as a whole (several backends may be asked in turn);
  // until one is measured, the slowest backend's own estimate.
  const timing = new RefusalTiming(Math.max(0, ...backends.map((backend) => backend.refusalDelayMs())));
  // contract §3: with one backend its own refusals are the ones to imitate.
  const refusalDelayMs = () =>
    backends.length === 1 ? (backends[0]?.refusalDelayMs() ?? 0) : timing.delayMs();
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? (() => performance.now());
  const probes = backends.map((backend) => ({
    name: backend.name,
    probe: cachedProbe(() => backend.probe(), options.probeTtlMs),
  }));

  return {
    async verify(username, password, clientIp): Promise<VerifyResult> {
      const serving = backendsFor(backends, username);
      if (serving.length === 0) {
        // contract §3/§8: no backend is contacted, yet the refusal takes as long as a wrong password.
        await sleep(refusalDelayMs());
        return { ok: false, failure: 'bad_credentials', reason: 'no backend serves this username' };
      }
      let firstOutage: VerifyResult | null = null;
      let last: VerifyResult | null = null;
      const started = now();
      for (const backend of serving) {
        const result = { ...(await backend.verify(username, password, clientIp)), backend: backend.name };
        if (result.ok) return result;
        if (result.failure !== 'bad_credentials') firstOutage ??= result;
        last = result;
      }
      // contract §8: an outage anywhere outranks the refusals, so nobody is locked out by it.
      if (firstOutage !== null) return firstOutage;
      timing.record(now() - started);
      return last as VerifyResult;
    },
    refusalDelayMs,
    // The backends are asked one after another.
    maxVerifyMs: backends.reduce((sum, backend) => sum + backend.maxVerifyMs, 0),
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
