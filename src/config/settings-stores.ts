// The rows of the settings table for the stores (contract §6): the database, where sessions and
// throttle counters live, and how each is reached. settings.ts places them in the one table;
// store-options.ts decides their rules.
import { boolean, file, integer, matching, row, text } from './settings-parsers.ts';

/** DATABASE_*, SESSION_STORE, REDIS_* and SQLITE_* rows, in table order. */
export const STORE_SETTINGS = {
  DATABASE_URL: row(
    matching(
      /^(sqlite:.+|postgres(ql)?:\/\/.+)$/,
      'expected sqlite:PATH or postgres://…',
    )({
      default: 'sqlite:data/clubhouse.db',
      desc: 'the database: `sqlite:PATH`, or `postgres://USER:PASSWORD@HOST:5432/DB` (PostgreSQL ≥ 13)',
    }),
    { secret: 'url' },
  ),
  DATABASE_CA_FILE: row(
    file({
      default: undefined,
      desc: "a PEM CA that PostgreSQL's certificate must chain to; implies `sslmode=verify-full` (or put `sslrootcert=FILE` in the URL)",
    }),
    { unset: '(none)' },
  ),
  DATABASE_TRANSACTION_POOLER: row(
    boolean({
      default: false,
      desc: '`true` when PgBouncer (`pool_mode = transaction`) sits in between: no startup parameters, no named prepared statements; `clubhouse migrate` sets the timeouts as role defaults',
    }),
  ),
  SESSION_STORE: row(
    matching(
      /^(rediss?|redis-sentinel):\/\/.+/,
      'expected redis://…, rediss://… or redis-sentinel://… (or leave unset to keep sessions in the database)',
    )({
      default: undefined,
      desc: 'where sessions and throttle counters live: unset (the database) or `redis://[:PASSWORD@]HOST:6379[/DB]` (`rediss://` for TLS, `redis-sentinel://HOST1:26379,HOST2:26379/MASTER` for Sentinel; Redis ≥ 6.2, not Cluster)',
    }),
    { unset: '(the database)', secret: 'url' },
  ),
  REDIS_CA_FILE: row(
    file({
      default: undefined,
      desc: "a PEM CA that Redis's certificate must chain to (`rediss://` only; the certificate is always verified)",
    }),
    { unset: '(system roots only)' },
  ),
  REDIS_KEY_PREFIX: row(
    text({
      default: 'clubhouse:',
      desc: 'prefix of every Redis key, so that several services can share one Redis',
    }),
  ),
  SQLITE_BUSY_TIMEOUT_MS: row(
    integer(
      0,
      60_000,
    )({
      default: 5000,
      desc: "how long a statement waits for another process's write lock before the request answers 503",
    }),
  ),
};
