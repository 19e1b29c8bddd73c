// Sign-ins in progress in Redis (contract §10): one string per flow, `P oidc-flow:<sha256 hex>`, its
// value the expiry (8 bytes, the caller's clock, as the SQL stores keep it) then the sealed data;
// PEXPIRE reclaims the memory of abandoned ones. GETDEL (Redis ≥ 6.2) takes it in one atomic step.
import type { Redis } from 'ioredis';
import type { FlowStore } from '../types.ts';
import { mapped } from './driver.ts';
import type { Keys } from './scripts.ts';

/** The flow store on `client`. */
export function redisFlowStore(client: Redis, k: Keys): FlowStore {
  return {
    put: async ({ idHash, data, createdAt, expiresAt }) => {
      const expiry = Buffer.alloc(8);
      expiry.writeDoubleBE(expiresAt);
      // NX: a handle is fresh randomness; an existing key is never overwritten.
      const ttlMs = Math.max(1, expiresAt - createdAt);
      await mapped(
        client.set(k.flow(idHash.toString('hex')), Buffer.concat([expiry, data]), 'PX', ttlMs, 'NX'),
      );
    },
    take: async (idHash, now) => {
      const value = await mapped(client.getdelBuffer(k.flow(idHash.toString('hex'))));
      if (value === null || value.length < 8 || value.readDoubleBE(0) <= now) return null;
      return value.subarray(8);
    },
    // Every flow key carries a TTL: Redis reclaims them by itself.
    purgeExpired: async () => 0,
  };
}
