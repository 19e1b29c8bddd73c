// The PostgreSQL driver of the shared SQL layer: an adapter over what postgres-pool.ts exports (a
// query with failures mapped, and a transaction on one connection) that awaits each step.
import type pg from 'pg';
import { type SqlDriver, type Statement, stepAsync } from '../sql/driver.ts';
import { BULK_TIMEOUT_MS, onClient, POSTGRES_BEGIN, POSTGRES_DIALECT, result } from './dialect.ts';
import { query, transaction } from './pool.ts';

/** The driver on `pool`. */
export function postgresDriver(pool: pg.Pool): SqlDriver {
  const onPool = async ({ sql, params, name }: Statement) =>
    result(await query(pool, sql, [...params], name));
  return {
    dialect: POSTGRES_DIALECT,
    run: (steps, mode) => {
      if (mode === undefined) return stepAsync(steps, onPool);
      return transaction(
        pool,
        async (client) => {
          if (mode !== 'bulk') return stepAsync(steps, onClient(client));
          await client.query(`SET LOCAL statement_timeout = ${BULK_TIMEOUT_MS}`);
          await client.query(`SET LOCAL lock_timeout = ${BULK_TIMEOUT_MS}`);
          return stepAsync(steps, onClient(client, BULK_TIMEOUT_MS));
        },
        POSTGRES_BEGIN[mode],
      );
    },
  };
}
