// Opens the stores the settings name (contract §6: DATABASE_URL, SESSION_STORE).
import type { Config } from '../config.ts';
import { migrateSqlite, openSqliteDatabase, openSqliteStores, sqlitePath } from './sqlite.ts';
import type { Stores } from './types.ts';

/** The stores for these settings, migrated and ready. */
export async function openStores(
  config: Pick<Config, 'databaseUrl' | 'sessionStore' | 'sqliteBusyTimeoutMs'>,
): Promise<Stores> {
  if (config.sessionStore !== null) {
    throw new Error('SESSION_STORE=redis://… is not available in this version; leave it unset');
  }
  if (config.databaseUrl.startsWith('sqlite:')) {
    return openSqliteStores(sqlitePath(config.databaseUrl), config.sqliteBusyTimeoutMs);
  }
  throw new Error('DATABASE_URL=postgres://… is not available in this version; use sqlite:PATH');
}

/** Applies pending migrations (`clubhouse migrate`); returns the versions applied. */
export async function migrateStores(config: Pick<Config, 'databaseUrl'>): Promise<number[]> {
  if (!config.databaseUrl.startsWith('sqlite:')) {
    throw new Error('DATABASE_URL=postgres://… is not available in this version; use sqlite:PATH');
  }
  const db = openSqliteDatabase(sqlitePath(config.databaseUrl));
  try {
    return migrateSqlite(db);
  } finally {
    db.close();
  }
}
