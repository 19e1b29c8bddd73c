// The store layer's options from the settings (contract §6): DATABASE_URL picks SQLite or PostgreSQL
// for everything; SESSION_STORE=redis://… (rediss://, redis-sentinel://) moves sessions and throttle
// counters to Redis, while groups, users and the secret key stay in the database.
import type { StoreOptions } from '../store/options.ts';
import { type Config, ConfigError } from './config.ts';
import { parsePostgresTls } from './postgres-url.ts';
import { parseRedisTarget } from './redis-url.ts';

/** The settings the stores are opened from. */
export type StoreSettings = Pick<
  Config,
  | 'databaseUrl'
  | 'databaseCaFile'
  | 'databaseTransactionPooler'
  | 'sessionStore'
  | 'redisCaFile'
  | 'redisKeyPrefix'
  | 'sqliteBusyTimeoutMs'
>;

/** The file path of a `sqlite:PATH` (or `sqlite://PATH`) database URL. */
export function sqlitePath(databaseUrl: string): string {
  return databaseUrl.replace(/^sqlite:(\/\/)?/, '');
}

/** The stores `config` names. loadConfig has checked these; a hand-made Config gets the same error. */
export function storeOptions(config: StoreSettings): StoreOptions {
  return { database: database(config), sessions: sessions(config) };
}

function database(config: StoreSettings): StoreOptions['database'] {
  if (!/^postgres(ql)?:\/\//.test(config.databaseUrl)) {
    return {
      kind: 'sqlite',
      path: sqlitePath(config.databaseUrl),
      busyTimeoutMs: config.sqliteBusyTimeoutMs,
    };
  }
  const parsed = parsePostgresTls(config.databaseUrl, config.databaseCaFile);
  if (!parsed.ok) throw new ConfigError(parsed.variable, parsed.message);
  return { kind: 'postgres', target: parsed.tls, transactionPooler: config.databaseTransactionPooler };
}

function sessions(config: StoreSettings): StoreOptions['sessions'] {
  if (config.sessionStore === null) return null;
  const parsed = parseRedisTarget(config.sessionStore, config.redisCaFile);
  if (!parsed.ok) throw new ConfigError(parsed.variable, parsed.message);
  return { kind: 'redis', target: parsed.target, keyPrefix: config.redisKeyPrefix };
}
