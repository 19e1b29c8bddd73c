// The store layer's options from the settings (contract §6): DATABASE_URL picks SQLite or PostgreSQL
// for everything; SESSION_STORE=redis://… (rediss://, redis-sentinel://) moves sessions and throttle
// counters to Redis, while groups, users and the secret key stay in the database. Every rule of
// these settings is decided here once; loadConfig hands the result out as `config.store`.
import { existsSync } from 'node:fs';
import type { StoreOptions } from '../store/options.ts';
import { ConfigError } from './error.ts';
import { parsePostgresTls } from './postgres-url.ts';
import { parseRedisTarget } from './redis-url.ts';

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
  // issue 17: TLS asked for is never downgraded; unverified TLS only by name (sslmode=require).
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
