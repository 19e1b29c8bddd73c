// The Lua scripts of the Redis session store (redis.ts has the key layout). Each runs atomically:
// a session and the two sorted sets that index it never disagree, whatever runs concurrently.

export interface RedisScript {
  /** How many leading arguments are key names. */
  readonly keys: number;
  readonly lua: string;
}

export const SCRIPTS = {
  // KEYS: session, user-sessions:<user>, session-expiry. ARGV: id hex, username, created_at,
  // expires_at, ttl ms. The user's set drops members already expired and lives as long as its
  // longest session.
  create: {
    keys: 3,
    lua: `
      redis.call('HSET', KEYS[1], 'username', ARGV[2], 'created_at', ARGV[3], 'expires_at', ARGV[4])
      redis.call('PEXPIRE', KEYS[1], ARGV[5])
      redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[3])
      redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
      if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[5]) then redis.call('PEXPIRE', KEYS[2], ARGV[5]) end
      redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
      return 1`,
  },
  // KEYS: session, session-expiry. ARGV: id hex, user-sessions prefix. 1 when the session was there.
  delete: {
    keys: 2,
    lua: `
      local username = redis.call('HGET', KEYS[1], 'username')
      redis.call('ZREM', KEYS[2], ARGV[1])
      if not username then return 0 end
      redis.call('DEL', KEYS[1])
      redis.call('ZREM', ARGV[2] .. username, ARGV[1])
      return 1`,
  },
  // KEYS: user-sessions:<user>, session-expiry. ARGV: session prefix. Returns the sessions deleted.
  revokeUser: {
    keys: 2,
    lua: `
      local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
      local n = 0
      for _, id in ipairs(ids) do
        n = n + redis.call('DEL', ARGV[1] .. id)
        redis.call('ZREM', KEYS[2], id)
      end
      redis.call('DEL', KEYS[1])
      return n`,
  },
  // KEYS: session-expiry. ARGV: now, batch size, session prefix, user-sessions prefix. Deletes up to
  // a batch of sessions expired at now (expires_at <= now, as the SQL stores); returns how many.
  purgeExpired: {
    keys: 1,
    lua: `
      local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
      for _, id in ipairs(ids) do
        local key = ARGV[3] .. id
        local username = redis.call('HGET', key, 'username')
        if username then
          redis.call('DEL', key)
          redis.call('ZREM', ARGV[4] .. username, id)
        end
        redis.call('ZREM', KEYS[1], id)
      end
      return #ids`,
  },
} as const satisfies Record<string, RedisScript>;

export type ScriptName = keyof typeof SCRIPTS;
