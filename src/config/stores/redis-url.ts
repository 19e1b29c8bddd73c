// The forms SESSION_STORE takes (docs/operations.md: TLS to the stores, Redis Sentinel): one Redis
// (`redis://`, or `rediss://` for TLS verified against REDIS_CA_FILE or the system's roots) or
// Sentinel (`redis-sentinel://h1:26379,h2:26379/mymaster`: the sentinels to ask, and the name of the
// primary they watch). A Sentinel address list is not a URL that ioredis or WHATWG can parse (several
// hosts), hence this small reader.
import type { RedisEndpoint, RedisTarget } from '../../store/options.ts';

export type RedisTargetResult =
  | { readonly ok: true; readonly target: RedisTarget }
  | { readonly ok: false; readonly variable: string; readonly message: string };

const SENTINEL_PORT = 26379;
const SENTINEL_URL = /^redis-sentinel:\/\/([^/?#@]+)\/([^/?#]+)$/;
const ENDPOINT = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::([0-9]{1,5}))?$/i;

/** Reads SESSION_STORE and REDIS_CA_FILE; a form that cannot work is an error naming the variable. */
export function parseRedisTarget(sessionStore: string, redisCaFile: string | null): RedisTargetResult {
  const fail = (variable: string, message: string) => ({ ok: false, variable, message }) as const;
  if (/^rediss?:\/\/.+/.test(sessionStore)) {
    const tls = sessionStore.startsWith('rediss:');
    if (!tls && redisCaFile !== null) {
      // A CA for a plaintext connection would be silently unused.
      return fail('REDIS_CA_FILE', 'needs a rediss:// SESSION_STORE (TLS)');
    }
    return { ok: true, target: { kind: 'standalone', url: sessionStore, tls, caFile: redisCaFile } };
  }
  if (sessionStore.startsWith('redis-sentinel:')) {
    const match = SENTINEL_URL.exec(sessionStore);
    if (match === null) {
      return fail(
        'SESSION_STORE',
        'expected redis-sentinel://host1:26379,host2:26379/MASTER_NAME (no password, no options)',
      );
    }
    if (redisCaFile !== null) return fail('REDIS_CA_FILE', 'TLS is not supported with Sentinel');
    const sentinels: RedisEndpoint[] = [];
    for (const item of match[1]!.split(',')) {
      const endpoint = ENDPOINT.exec(item.trim());
      const port = Number(endpoint?.[2] ?? SENTINEL_PORT);
      if (endpoint === null || port < 1 || port > 65535) {
        return fail('SESSION_STORE', `"${item}" is not a sentinel address like host:26379`);
      }
      sentinels.push({ host: endpoint[1]!.replace(/^\[|\]$/g, ''), port });
    }
    return { ok: true, target: { kind: 'sentinel', sentinels, name: decodeURIComponent(match[2]!) } };
  }
  return fail(
    'SESSION_STORE',
    'expected redis://…, rediss://… or redis-sentinel://host:26379,…/MASTER (or leave unset to keep sessions in the database)',
  );
}
