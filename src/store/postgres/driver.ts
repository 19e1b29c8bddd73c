// The PostgreSQL side of the shared SQL layer: the connection a target makes (its TLS, read here),
// the bounded pool, its failure mapping, its transactions, and the driver that awaits each of the
// layer's steps (what the layer writes differently for PostgreSQL is dialect.ts). A dead or restarting
// server answers StoreUnavailableError('database') (HTTP 503); the pool replaces broken connections
// by itself, so the service recovers without a restart.
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import pg from 'pg';
import { StoreUnavailableError } from '../errors.ts';
import type { PostgresTarget } from '../options.ts';
import { type Result, type SqlDriver, type Statement, stepAsync } from '../sql/driver.ts';
import { POSTGRES_BEGIN, POSTGRES_DIALECT } from './dialect.ts';

/** Where and how to connect: the URL without ssl* words, pg's `ssl` option, and the pooler mode. */
export interface PostgresConnection {
  readonly url: string;
  readonly ssl: false | ConnectionOptions;
  /**
   * A transaction-mode pooler (PgBouncer) sits in between: no startup parameters it would refuse,
   * no named prepared statements (the next transaction may run on another server connection).
   */
  readonly transactionPooler: boolean;
}

/** The connection to a target; reads the CA file. A plain URL string means no TLS, direct. */
export function postgresConnection(
  target: string | PostgresTarget,
  transactionPooler = false,
): PostgresConnection {
  if (typeof target === 'string') return { url: target, ssl: false, transactionPooler };
  return { url: target.url, ssl: pgSslOptions(target), transactionPooler };
}

/** The `ssl` option for pg: false, or TLS options that verify as the target's sslmode says. */
function pgSslOptions(target: PostgresTarget): false | ConnectionOptions {
  if (target.mode === 'disable') return false;
  if (target.mode === 'require') return { rejectUnauthorized: false };
  // verify-full: the chain to the CA and the host name (Node's default check against the host).
  return target.caFile === null
    ? { rejectUnauthorized: true }
    : { rejectUnauthorized: true, ca: readFileSync(target.caFile, 'utf8') };
}

/** Bounds of one process's pool; with WORKERS=N the server holds up to N × max connections. */
export const POOL_SETTINGS = {
  max: 10,
  // A request waits this long for a connection (server down, or all busy) before answering 503.
  connectionTimeoutMillis: 3000,
  idleTimeoutMillis: 30_000,
  // Server side: a statement running longer is cancelled (57014); a lock waited on longer (55P03).
  // Sent as startup parameters when direct; `clubhouse migrate` also makes them the role's defaults
  // in the database, which is how they apply through a transaction-mode pooler (docs/operations.md, PgBouncer).
  statement_timeout: 5000,
  lock_timeout: 3000,
  // Client side: the answer of a query that PostgreSQL never sends (a half-open connection).
  query_timeout: 6000,
  keepAlive: true,
  application_name: 'clubhouse',
} as const;

// SQLSTATEs that mean "cannot answer now", not "bad data": connection exceptions (class 08),
// insufficient resources (53), shutdown/startup (57P0x), timeouts and cancels (57014, 55P03),
// serialisation failures and deadlocks (40001, 40P01: retrying later succeeds), and a read-only
// standby after a failover (25006).
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '57014',
  '55P03',
  '40001',
  '40P01',
  '25006',
]);
const UNAVAILABLE_CLASSES = new Set(['08', '53', '58']);
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
// What pg and pg-pool throw without a code when the connection fails or times out.
const DRIVER_MESSAGES =
  /^(timeout exceeded when trying to connect|Connection terminated|Query read timeout|Client has encountered a connection error)/;

/** True when `err` says PostgreSQL cannot answer now (as opposed to a constraint or a bug). */
export function isPostgresUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (err instanceof pg.DatabaseError && typeof code === 'string') {
    return UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_CLASSES.has(code.slice(0, 2));
  }
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  // Node reports a refused localhost (both ::1 and 127.0.0.1) as one AggregateError.
  if (err instanceof AggregateError) return err.errors.some(isPostgresUnavailable);
  return DRIVER_MESSAGES.test(err.message);
}

/** Rethrows `err`, as StoreUnavailableError('database') when it is an outage. */
export function mapPostgresError(err: unknown): never {
  if (isPostgresUnavailable(err)) throw new StoreUnavailableError('database', { cause: err });
  throw err;
}

// Pools behind a transaction-mode pooler: their queries are never named (see PostgresConnection).
const UNNAMED = new WeakSet<pg.Pool | pg.PoolClient>();

/** A bounded pool; `onError` hears of idle connections that break (the pool drops them). */
export function createPool(
  target: string | PostgresConnection,
  onError: (err: Error) => void = () => {},
): pg.Pool {
  const connection = typeof target === 'string' ? postgresConnection(target) : target;
  const { statement_timeout, lock_timeout, ...common } = POOL_SETTINGS;
  // PgBouncer answers "unsupported startup parameter: statement_timeout".
  const timeouts = connection.transactionPooler ? {} : { statement_timeout, lock_timeout };
  const pool = new pg.Pool({ connectionString: connection.url, ssl: connection.ssl, ...common, ...timeouts });
  if (connection.transactionPooler) UNNAMED.add(pool);
  // Without a listener, an idle client's error (the server restarting: 57P01) would crash the process.
  pool.on('error', onError);
  return pool;
}

/**
 * Runs one query with failures mapped; `name` makes it a prepared statement on each connection
 * (dropped behind a transaction-mode pooler, where a connection's statements are not ours to keep).
 */
export async function query<R extends pg.QueryResultRow>(
  pool: pg.Pool | pg.PoolClient,
  text: string,
  values: unknown[] = [],
  name?: string,
): Promise<pg.QueryResult<R>> {
  try {
    const named = name !== undefined && !UNNAMED.has(pool);
    return await pool.query<R>(named ? { name, text, values } : { text, values });
  } catch (err) {
    mapPostgresError(err);
  }
}

/** Runs `work` in one transaction on one connection; rolls back on any error. */
async function transaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  begin = 'BEGIN',
): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    mapPostgresError(err);
  }
  // A transaction's connection is the pool's: behind a transaction pooler, its queries stay unnamed.
  if (UNNAMED.has(pool)) UNNAMED.add(client);
  let broken = false;
  // A checked-out client has no pool listener: a connection lost between two of our queries would
  // otherwise be an unhandled 'error' event, which ends the process.
  const onError = () => {
    broken = true;
  };
  client.on('error', onError);
  try {
    await client.query(begin);
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    try {
      await client.query('ROLLBACK');
    } catch {
      // The connection itself failed: it must not go back into the pool.
      broken = true;
    }
    mapPostgresError(err);
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}

/** An import may rewrite a big file; its statements get longer than a request's. */
const BULK_TIMEOUT_MS = 300_000;

const result = (answer: pg.QueryResult): Result => ({
  rows: answer.rows,
  changes: answer.rowCount ?? 0,
});

/** Runs statements on one connection (a migration's, or a transaction's). */
export const onClient =
  (client: pg.ClientBase, timeoutMs?: number) =>
  async ({ sql, params }: Statement): Promise<Result> =>
    // query_timeout per query is honoured by pg (client.js) though @types/pg does not declare it.
    result(
      await client.query({ text: sql, values: [...params], query_timeout: timeoutMs } as pg.QueryConfig),
    );

/** The driver on `pool`: statements keep their names (prepared once per connection) but in a bulk. */
export function postgresDriver(pool: pg.Pool): SqlDriver {
  const on =
    (client: pg.Pool | pg.PoolClient) =>
    async ({ sql, params, name }: Statement) =>
      result(await query(client, sql, [...params], name));
  return {
    dialect: POSTGRES_DIALECT,
    run: (steps, mode) => {
      if (mode === undefined) return stepAsync(steps, on(pool));
      return transaction(
        pool,
        async (client) => {
          if (mode !== 'bulk') return stepAsync(steps, on(client));
          await client.query(`SET LOCAL statement_timeout = ${BULK_TIMEOUT_MS}`);
          await client.query(`SET LOCAL lock_timeout = ${BULK_TIMEOUT_MS}`);
          return stepAsync(steps, onClient(client, BULK_TIMEOUT_MS));
        },
        POSTGRES_BEGIN[mode],
      );
    },
  };
}
