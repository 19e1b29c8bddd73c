// The FlowStore of contract §10 on either SQL engine: a sign-in in progress, kept under its handle's
// hash and taken exactly once. The take is one DELETE … RETURNING: of two callbacks racing with the
// same handle, in any process or instance, the database lets one delete the row and the other none.
import type { FlowStore } from '../types.ts';
import { change, type SqlDriver, type Steps, select } from './driver.ts';

const PUT = 'INSERT INTO oidc_flows (id_hash, data, expires_at) VALUES ($1, $2, $3)';
const TAKE = 'DELETE FROM oidc_flows WHERE id_hash = $1 RETURNING data, expires_at';
const PURGE = 'DELETE FROM oidc_flows WHERE expires_at <= $1';

/** The flow operations; the SQL is the same on both engines. */
const flowSteps = {
  put: (idHash: Buffer, data: Buffer, expiresAt: number): Steps<number> =>
    change({ sql: PUT, params: [idHash, data, expiresAt], name: 'oidc-flow-put' }),
  // An expired flow is deleted as it is refused: nobody can take it later either.
  take: (idHash: Buffer, now: number): Steps<Buffer | null> =>
    select({ sql: TAKE, params: [idHash], name: 'oidc-flow-take' }, (rows) => {
      const row = rows[0];
      if (row === undefined || Number(row['expires_at']) <= now) return null;
      return Buffer.from(row['data'] as Uint8Array);
    }),
  purge: (now: number): Steps<number> => change({ sql: PURGE, params: [now], name: 'oidc-flow-purge' }),
};

/** The FlowStore over `driver`. */
export function sqlFlowStore({ run }: SqlDriver): FlowStore {
  return {
    put: async ({ idHash, data, expiresAt }) => {
      await run(flowSteps.put(idHash, data, expiresAt));
    },
    take: (idHash, now) => run(flowSteps.take(idHash, now)),
    purgeExpired: (now) => run(flowSteps.purge(now)),
  };
}
