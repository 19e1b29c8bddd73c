// The chain of backends (contract §8): asked in order, the first success logs in. `bad_credentials`
// asks the next; so does an outage, and if nobody succeeds the attempt keeps the first outage class,
// so an outage locks nobody out (only `bad_credentials` counts toward the throttle, §3). A backend
// restricted to domains is asked only for `local@domain` usernames of its domains; a username no
// backend serves is refused without contacting any (the login procedure times every refusal, §3).

import type { Authenticator, Backend, GuardStats, VerifyResult } from './authenticator.ts';
import { readinessOf } from './probe.ts';

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
}

/** One Authenticator over ordered backends. */
export function createChain(backends: readonly Backend[], options: ChainOptions): Authenticator {
  return {
    backendNames: backends.map((backend) => backend.name),
    async verify(username, password, clientIp): Promise<VerifyResult> {
      const serving = backendsFor(backends, username);
      // contract §8: no backend is contacted; the login procedure answers it as late as any refusal.
      if (serving.length === 0)
        return { ok: false, failure: 'bad_credentials', reason: 'no backend serves this username' };
      let firstOutage: VerifyResult | null = null;
      let last: VerifyResult | null = null;
      for (const backend of serving) {
        const result = { ...(await backend.verify(username, password, clientIp)), backend: backend.name };
        if (result.ok) return result;
        if (result.failure !== 'bad_credentials') firstOutage ??= result;
        last = result;
      }
      // contract §8: an outage anywhere outranks the refusals, so nobody is locked out by it.
      if (firstOutage !== null) return firstOutage;
      return last as VerifyResult;
    },
    // contract §3: a wrong password for this username is refused by each backend of its route in
    // turn, so a refusal decided without them waits one recent refusal of each, added up; never the
    // times of backends its route would not ask (a disabled user on a fast domain must not wait for
    // a slow domain's directory: the wait would tell the two apart).
    refusalDelayMs(username) {
      return backendsFor(backends, username).reduce((sum, backend) => sum + backend.refusalDelayMs(), 0);
    },
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
    readiness: readinessOf(backends, options.probeTtlMs),
    async close() {
      await Promise.all(backends.map((backend) => backend.close()));
    },
  };
}
