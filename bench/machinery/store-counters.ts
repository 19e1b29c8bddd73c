// What the shared stores did during a round, for docs/scaling.md's per-request figures: the scripts
// Redis ran (EVALSHA and EVAL calls: every read of the hot path is one script, one round trip), the
// commands it ran (those inside scripts included), and the transactions PostgreSQL committed on the
// service's database (pg_stat_database; every statement outside a transaction is one). Read before
// and after a round, from outside the service (one connection each, whose own reads are subtracted).
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';

interface StoreCounts {
  readonly redisScripts: number;
  readonly redisCommands: number;
  readonly postgresTransactions: number;
}

export interface StoreCounters {
  read(): Promise<StoreCounts>;
  close(): Promise<void>;
}

/**
 * Counters of the Redis at `redisUrl` (null: none) and of the database `databaseUrl` names, read
 * through `adminUrl`'s server. PostgreSQL publishes its statistics at most once a second, so a read
 * waits that long first.
 */
export async function storeCounters(
  redisUrl: string | null,
  databaseUrl: string,
  adminUrl: string,
): Promise<StoreCounters> {
  const redis = redisUrl === null ? null : new Redis(redisUrl, { lazyConnect: true });
  await redis?.connect();
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const database = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  let reads = 0;
  return {
    async read() {
      await sleep(1100);
      reads++;
      const info = redis === null ? '' : await redis.info('commandstats');
      const calls = (command: string) =>
        [...info.matchAll(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'gm'))].reduce(
          (total, match) => total + Number(match[1]),
          0,
        );
      const { rows } = await admin.query(
        'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1',
        [database],
      );
      // Each earlier INFO is one command of ours, not the service's.
      return {
        redisScripts: calls('evalsha') + calls('eval'),
        redisCommands: calls('[a-z|]+') - (reads - 1),
        postgresTransactions: Number(rows[0]?.n ?? 0),
      };
    },
    async close() {
      redis?.disconnect();
      await admin.end();
    },
  };
}
