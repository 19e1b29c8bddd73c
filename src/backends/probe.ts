// Readiness probes (contract §6, §8): the protocol is each backend's (imap/client.ts's
// probeImapServer, ldap's probeLdap); here, the cache that keeps /readyz from hammering a server.
import type { ProbeResult } from './authenticator.ts';

/**
 * A probe cached for `ttlMs` and shared by concurrent callers, so readiness checks cannot hammer
 * the mail server (20 probes in 2 s open at most a handful of connections).
 */
export function cachedProbe(probe: () => Promise<ProbeResult>, ttlMs: number, now: () => number = Date.now) {
  let last: { at: number; result: ProbeResult } | null = null;
  let running: Promise<ProbeResult> | null = null;
  let connections = 0;
  return {
    get connections() {
      return connections;
    },
    check(): Promise<ProbeResult> {
      if (last !== null && now() - last.at < ttlMs) return Promise.resolve(last.result);
      if (running !== null) return running;
      connections++;
      running = probe()
        .then((result) => {
          last = { at: now(), result };
          return result;
        })
        .finally(() => {
          running = null;
        });
      return running;
    },
  };
}
