// Leases (the group sync's: one run at a time per database, contract §11): one row per job, who
// holds it and until when by the database's clock, so that every instance judges expiry alike.
// Taken, renewed and released by single atomic statements; a writing transaction checks that its
// lease is still held, and on PostgreSQL keeps the row locked until it commits.
import { LeaseLostError } from '../errors.ts';
import type { GroupSyncStore, LeaseHolder } from '../group-sync-types.ts';
import { change, type Dialect, type SqlDriver, type Steps, select } from './driver.ts';

/** The lease is still `lease`'s, held (PostgreSQL: row-locked) until this transaction ends. */
export function* checkLease(dialect: Dialect, lease: LeaseHolder): Steps<void> {
  const { rows } = yield {
    sql: `SELECT 1 AS held FROM sync_leases WHERE name = $1 AND holder = $2 AND expires_at > ${dialect.nowMs}${dialect.forUpdate}`,
    params: [lease.name, lease.holder],
  };
  if (rows.length === 0) throw new LeaseLostError(lease.name);
}

/** The lease statements of a GroupSyncStore over `driver`. */
export function sqlLeases({
  run,
  dialect,
}: SqlDriver): Pick<GroupSyncStore, 'takeLease' | 'renewLease' | 'releaseLease' | 'leaseHolder'> {
  const now = dialect.nowMs;
  return {
    // A free, expired or own lease is taken; a live one of another holder is not.
    takeLease: async ({ name, holder }, ttlMs) =>
      (await run(
        change({
          sql: `INSERT INTO sync_leases (name, holder, expires_at) VALUES ($1, $2, ${now} + $3)
            ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
            WHERE sync_leases.expires_at <= ${now} OR sync_leases.holder = excluded.holder`,
          params: [name, holder, ttlMs],
        }),
      )) > 0,
    renewLease: async ({ name, holder }, ttlMs) =>
      (await run(
        change({
          sql: `UPDATE sync_leases SET expires_at = ${now} + $3
            WHERE name = $1 AND holder = $2 AND expires_at > ${now}`,
          params: [name, holder, ttlMs],
        }),
      )) > 0,
    releaseLease: async ({ name, holder }) => {
      await run(
        change({ sql: 'DELETE FROM sync_leases WHERE name = $1 AND holder = $2', params: [name, holder] }),
      );
    },
    leaseHolder: (name) =>
      run(
        select(
          {
            sql: `SELECT holder, expires_at - ${now} AS remaining FROM sync_leases
              WHERE name = $1 AND expires_at > ${now}`,
            params: [name],
          },
          (rows) => {
            const row = rows[0];
            return row === undefined
              ? null
              : { holder: String(row['holder']), remainingMs: Number(row['remaining']) };
          },
        ),
      ),
  };
}
