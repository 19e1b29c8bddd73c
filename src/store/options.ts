// What the store layer is given to open (contract §6): plain values, parsed and checked by whoever
// read the settings (config/stores/settings.ts). The store reads no environment and no URL; what a
// target becomes for a driver (the CA file read, pg's `ssl`, ioredis's `tls`) is each driver's own.

import type { GroupMemoryLimits } from './freshness/group-memory.ts';
import type { GroupJson } from './group-types.ts';
import type { TlsState } from './types.ts';

/** libpq's `sslmode` words that clubhouse accepts (no silent downgrade: docs/operations.md). */
export type PostgresSslMode = 'disable' | 'require' | 'verify-full';

/** A PostgreSQL server and how to trust it. */
export interface PostgresTarget {
  /** The connection URL without its ssl* parameters (pg would apply its own reading of them). */
  readonly url: string;
  readonly mode: PostgresSslMode;
  /** The CA to verify against (sslrootcert or DATABASE_CA_FILE); null = the system's roots. */
  readonly caFile: string | null;
}

export interface RedisEndpoint {
  readonly host: string;
  readonly port: number;
}

/** One Redis (TLS verified against `caFile` or the system's roots), or the sentinels of a primary. */
export type RedisTarget =
  | {
      readonly kind: 'standalone';
      readonly url: string;
      readonly tls: boolean;
      readonly caFile: string | null;
    }
  | { readonly kind: 'sentinel'; readonly sentinels: readonly RedisEndpoint[]; readonly name: string };

export interface StoreOptions {
  /** Groups, users, the secret key, and sessions and throttle unless `sessions` moves them. */
  readonly database:
    | { readonly kind: 'sqlite'; readonly path: string; readonly busyTimeoutMs: number }
    | { readonly kind: 'postgres'; readonly target: PostgresTarget; readonly transactionPooler: boolean };
  /** Sessions and throttle counters elsewhere; null: in the database. */
  readonly sessions: null | {
    readonly kind: 'redis';
    readonly target: RedisTarget;
    readonly keyPrefix: string;
  };
}

/**
 * What a serving process keeps in memory, made exact by the freshness gate (freshness/gate.ts); each
 * null to keep none of that kind. Absent altogether: nothing (the command line, a primary that
 * serves nothing).
 */
export interface MemoryOptions {
  /** Sessions, at most `capacity` of them (the oldest leave first). */
  readonly sessions: { readonly capacity: number } | null;
  /** The group pages, as the JSON `json` writes, within `limits`. */
  readonly groups: { readonly json: GroupJson; readonly limits: GroupMemoryLimits } | null;
}

export interface OpenOptions {
  /** Apply pending migrations first (default true; a cluster's workers leave it to the primary). */
  readonly migrate?: boolean;
  /** Hears of background connection errors (the stores reconnect by themselves). */
  readonly onError?: (store: 'database' | 'sessions', err: Error) => void;
  /** What to keep in memory; absent: nothing. */
  readonly memory?: MemoryOptions;
  /** Hears when the Redis session memory's key events stop or flow again (logged). */
  readonly onKeyEvents?: (flowing: boolean, why: string) => void;
}

/** The TLS state of the connection to each store (/readyz, `clubhouse config check`). */
export function storeTls(options: StoreOptions): { database: TlsState; sessions: TlsState } {
  const { database, sessions } = options;
  const databaseTls = database.kind === 'sqlite' ? 'local' : postgresTlsState(database.target.mode);
  if (sessions === null) return { database: databaseTls, sessions: databaseTls };
  const { target } = sessions;
  return { database: databaseTls, sessions: target.kind === 'standalone' && target.tls ? 'verified' : 'off' };
}

function postgresTlsState(mode: PostgresSslMode): TlsState {
  if (mode === 'disable') return 'off';
  return mode === 'require' ? 'not verified' : 'verified';
}
