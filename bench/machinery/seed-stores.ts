// Seeds the stores of the two-instance cases with the data seed.ts puts in SQLite: groups and
// memberships through the store's own import (set-based statements over unnest), the sessions
// straight into Redis in the session store's key layout (src/store/redis/scripts.ts), a script and
// a ZADD per batch of 10 000, and the same sessions into PostgreSQL's sessions table (for the
// instances without SESSION_STORE), one INSERT over unnest per batch.
import { Redis } from 'ioredis';
import pg from 'pg';
import { hashSessionId } from '../../src/auth/sessions.ts';
import { loadConfig } from '../../src/config/config.ts';
import { applyImport } from '../../src/groups/import.ts';
import { openStores } from '../../src/store/open.ts';
import { keys } from '../../src/store/redis/scripts.ts';
import {
  groupOf,
  groupsOf,
  loadLines,
  rawSessionIds,
  type SeedPlan,
  sessionId,
  sessionTimes,
  statusOf,
  username,
} from './seed.ts';

const BATCH = 10_000;
// One call per batch of sessions: HSET and PEXPIREAT run inside Redis, not as 2 000 000 client
// commands. ARGV: id hex, username, created_at, expires_at, … KEYS[1]: the session key prefix.
const WRITE_SESSIONS = `
  for i = 1, #ARGV, 4 do
    local key = KEYS[1] .. ARGV[i]
    redis.call('HSET', key, 'username', ARGV[i + 1], 'created_at', ARGV[i + 2], 'expires_at', ARGV[i + 3])
    redis.call('PEXPIREAT', key, ARGV[i + 3])
  end
  return 0`;

/** Imports `plan`'s groups, users and memberships into the (empty) PostgreSQL database `url`. */
async function seedPostgres(url: string, plan: SeedPlan): Promise<void> {
  const stores = await openStores(loadConfig({ DATABASE_URL: url }).store);
  try {
    const groups = Array.from({ length: plan.groups }, (_, i) => groupOf(i + 1));
    const memberships: { group: number; username: string; status: number }[] = [];
    for (let u = 0; u < plan.users; u++) {
      groupsOf(u, plan).forEach((group, k) => {
        memberships.push({ group, username: username(u), status: statusOf(k) });
      });
    }
    const outcome = await applyImport(stores, { groups, users: [], memberships }, 'lower');
    if (!outcome.ok) throw new Error(`seed import refused: ${JSON.stringify(outcome.problems.slice(0, 3))}`);
  } finally {
    await stores.close();
  }
}

async function run(pipeline: ReturnType<Redis['pipeline']>): Promise<void> {
  const results = (await pipeline.exec()) ?? [];
  const failed = results.find(([err]) => err !== null);
  if (failed !== undefined) throw failed[0];
}

/**
 * Writes the `plan.sessions` sessions of `ids` (seed.ts rawSessionIds) to the PostgreSQL database
 * `url`, whose users seedPostgres made, as the session store's create would (no client address or
 * agent), then has PostgreSQL analyze the table.
 */
async function seedPostgresSessions(url: string, plan: SeedPlan, ids: Buffer): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const now = Date.now();
    for (let start = 0; start < plan.sessions; start += BATCH) {
      const hashes: Buffer[] = [];
      const users: string[] = [];
      const created: number[] = [];
      const expires: number[] = [];
      for (let i = start; i < Math.min(plan.sessions, start + BATCH); i++) {
        const { createdAt, expiresAt } = sessionTimes(i, now);
        hashes.push(hashSessionId(sessionId(ids, i)));
        users.push(username(i % plan.users));
        created.push(createdAt);
        expires.push(expiresAt);
      }
      await client.query(
        'INSERT INTO sessions (id_hash, username, created_at, expires_at) ' +
          'SELECT * FROM unnest($1::bytea[], $2::text[], $3::bigint[], $4::bigint[])',
        [hashes, users, created, expires],
      );
    }
    await client.query('ANALYZE sessions');
  } finally {
    await client.end();
  }
}

/**
 * Writes the `plan.sessions` sessions of `ids` (seed.ts rawSessionIds) to the Redis at `url` under
 * the default key prefix, as the session store's create would (hash with PEXPIREAT at its expiry,
 * the user's and the global expiry sorted sets).
 */
async function seedRedis(url: string, plan: SeedPlan, ids: Buffer): Promise<void> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  await client.connect();
  try {
    // The default REDIS_KEY_PREFIX: the bench's servers leave it unset.
    const k = keys(loadConfig({}).redisKeyPrefix);
    const now = Date.now();
    // Per user: [expires_at, id hex, …] for one ZADD, and the latest expiry for its PEXPIREAT.
    const perUser: (string | number)[][] = Array.from({ length: plan.users }, () => []);
    const latest = new Float64Array(plan.users);
    for (let start = 0; start < plan.sessions; start += BATCH) {
      const pipeline = client.pipeline();
      const sessions: (string | number)[] = [];
      const expiry: (string | number)[] = [];
      for (let i = start; i < Math.min(plan.sessions, start + BATCH); i++) {
        const hex = hashSessionId(sessionId(ids, i)).toString('hex');
        const { createdAt, expiresAt } = sessionTimes(i, now);
        const user = i % plan.users;
        sessions.push(hex, username(user), createdAt, expiresAt);
        expiry.push(expiresAt, hex);
        perUser[user]!.push(expiresAt, hex);
        latest[user] = Math.max(latest[user]!, expiresAt);
      }
      pipeline.eval(WRITE_SESSIONS, 1, k.sessionPrefix, ...sessions);
      pipeline.zadd(k.expiry, ...expiry);
      await run(pipeline);
    }
    for (let start = 0; start < plan.users; start += BATCH / 10) {
      const pipeline = client.pipeline();
      for (let user = start; user < Math.min(plan.users, start + BATCH / 10); user++) {
        if (perUser[user]!.length === 0) continue;
        pipeline.zadd(k.userSessions(username(user)), ...perUser[user]!);
        pipeline.pexpireat(k.userSessions(username(user)), latest[user]!);
      }
      await run(pipeline);
    }
  } finally {
    client.disconnect();
  }
}

/**
 * The shared stores as the instances case loads them: `plan` in the PostgreSQL database
 * `databaseUrl`, its sessions there and (with `redisUrl`) in Redis too. Returns the load file's text.
 */
export async function seedSharedStores(
  databaseUrl: string,
  redisUrl: string | null,
  plan: SeedPlan,
): Promise<string> {
  await seedPostgres(databaseUrl, plan);
  const ids = rawSessionIds(plan.sessions);
  await seedPostgresSessions(databaseUrl, plan, ids);
  if (redisUrl !== null) await seedRedis(redisUrl, plan, ids);
  return loadLines(ids, plan);
}
