// Readiness probes (contract §6, §8, §10): the protocol is each backend's and provider's
// (imap/client.ts's probeImapServer, ldap's probeLdap, oidc's probe); here, the cache that keeps
// /readyz from hammering a server, and the answer of several probes by name.
import type { ProbeResult } from './authenticator.ts';

/**
 * A probe cached for `ttlMs` and shared by concurrent callers, so readiness checks cannot hammer
 * the mail server (20 probes in 2 s open at most a handful of connections).
 */
function cachedProbe(probe: () => Promise<ProbeResult>, ttlMs: number, now: () => number = Date.now) {
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

/**
 * The readiness of several probed parts by name, "ok" or why not; each probe cached for `ttlMs`
 * (the backends of the chain, the identity providers).
 */
export function readinessOf(
  parts: readonly { readonly name: string; probe(): Promise<ProbeResult> }[],
  ttlMs: number,
): () => Promise<Record<string, string>> {
  const probes = parts.map((part) => ({ name: part.name, cached: cachedProbe(() => part.probe(), ttlMs) }));
  return async () => {
    const answers = await Promise.all(
      probes.map(async ({ name, cached }) => {
        const result = await cached.check();
        return [name, result.ok ? 'ok' : result.reason] as const;
      }),
    );
    return Object.fromEntries(answers);
  };
}
