// The stores' settings (contract §6): the DATABASE_*, SESSION_STORE, REDIS_* and SQLITE_* rows of the
// settings table, and their rules. DATABASE_URL picks SQLite or PostgreSQL for everything;
// SESSION_STORE=redis://… (rediss://, redis-sentinel://) moves sessions and throttle counters to
// Redis, while groups, users and the secret key stay in the database. Every rule of these settings
// is decided here once (the URLs' own forms in postgres-url.ts and redis-url.ts); loadConfig hands
// the result out as `config.store`, the store layer's own option type.
import { existsSync } from 'node:fs';
import type { StoreOptions } from '../../store/options.ts';
import { ConfigError } from '../error.ts';
import { boolean, file, integer, matching, row, text } from '../settings-parsers.ts';
import { parsePostgresTls } from './postgres-url.ts';
import { parseRedisTarget } from './redis-url.ts';

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

/** The settings the stores are opened from, as parsed by the table. */
export interface StoreSettings {
  readonly databaseUrl: string;
  readonly databaseCaFile: string | null;
  readonly databaseTransactionPooler: boolean;
  readonly sessionStore: string | null;
  readonly redisCaFile: string | null;
  readonly redisKeyPrefix: string;
  readonly sqliteBusyTimeoutMs: number;
}

/** The file path of a `sqlite:PATH` (or `sqlite://PATH`) database URL. */
export function sqlitePath(databaseUrl: string): string {
  return databaseUrl.replace(/^sqlite:(\/\/)?/, '');
}

/** The stores the settings name; throws ConfigError naming the setting a rule refuses. */
export function storeOptions(settings: StoreSettings): StoreOptions {
  return { database: database(settings), sessions: sessions(settings) };
}

function database(settings: StoreSettings): StoreOptions['database'] {
  if (!/^postgres(ql)?:\/\//.test(settings.databaseUrl)) {
    if (settings.databaseCaFile !== null || settings.databaseTransactionPooler) {
      throw new ConfigError(
        settings.databaseCaFile !== null ? 'DATABASE_CA_FILE' : 'DATABASE_TRANSACTION_POOLER',
        'applies to a postgres:// DATABASE_URL only',
      );
    }
    return {
      kind: 'sqlite',
      path: sqlitePath(settings.databaseUrl),
      busyTimeoutMs: settings.sqliteBusyTimeoutMs,
    };
  }
  // TLS asked for is never downgraded; unverified TLS only by name (sslmode=require, postgres-url.ts).
  const parsed = parsePostgresTls(settings.databaseUrl, settings.databaseCaFile);
  if (!parsed.ok) throw new ConfigError(parsed.variable, parsed.message);
  if (parsed.tls.caFile !== null && !existsSync(parsed.tls.caFile))
    throw new ConfigError('DATABASE_URL', `sslrootcert: no such file "${parsed.tls.caFile}"`);
  return { kind: 'postgres', target: parsed.tls, transactionPooler: settings.databaseTransactionPooler };
}

function sessions(settings: StoreSettings): StoreOptions['sessions'] {
  if (settings.sessionStore === null) {
    if (settings.redisCaFile !== null)
      throw new ConfigError('REDIS_CA_FILE', 'needs a rediss:// SESSION_STORE');
    return null;
  }
  const parsed = parseRedisTarget(settings.sessionStore, settings.redisCaFile);
  if (!parsed.ok) throw new ConfigError(parsed.variable, parsed.message);
  return { kind: 'redis', target: parsed.target, keyPrefix: settings.redisKeyPrefix };
}
