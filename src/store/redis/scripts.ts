// The key layout of the Redis session and throttle stores, and their Lua scripts. Under a
// configurable prefix P (REDIS_KEY_PREFIX):
//
//   P session:<sha256 hex>          hash {username, created_at, expires_at, and when known client_ip,
//                                   user_agent, method, passkey}, PEXPIRE to its expiry
//   P session-seen:<sha256 hex>     string: when the session was last seen (ms), PEXPIRE to the
//                                   session's; apart from the session's hash because every instance
//                                   forgets a session whose key changes (key-events.ts), and a
//                                   sighting changes no answer (a hash written before this key existed
//                                   may still hold a last_seen field, read when the key is absent)
//   P user-sessions:<username>      sorted set: session hex → expires_at (revokeUser, countUser)
//   P session-expiry                sorted set: session hex → expires_at, every session
//                                   (countActive: ZCOUNT, O(log N); purgeExpired: a range, O(log N + M))
//   P throttle:<key>                sorted set: fingerprint → time of the failure (ZADD GT = max),
//                                   pruned on write, PEXPIRE one window after the last failure
//   P known-clients:<username>      sorted set: client IP → expires_at, PEXPIRE to the latest expiry
//   P throttle-pending:<key>        hash: guess id → "expires_at|fingerprint", guesses in flight,
//                                   PEXPIRE to the latest expiry
//   P oidc-flow:<sha256 hex>        string: a sign-in in progress (flows.ts), PEXPIRE to its expiry
//   P session-log-state, P session-log   the deletion log of the sessions (session-log.ts)
//
// Writes touching several keys are these scripts, each atomic: a session and the two sorted sets
// that index it never disagree, and a guess's admission is checked and added in one step, whatever
// runs concurrently. The scripts derive some key names from data (a session's user), so this needs
// a standalone Redis or Sentinel, not Redis Cluster.
import type { Redis } from 'ioredis';
import { LOG_DELETIONS, SESSION_LOG_SCRIPTS } from './session-log.ts';

/** The key names under `prefix`. */
export function keys(prefix: string) {
  return {
    session: (idHex: string) => `${prefix}session:${idHex}`,
    sessionPrefix: `${prefix}session:`,
    userSessions: (username: string) => `${prefix}user-sessions:${username}`,
    userSessionsPrefix: `${prefix}user-sessions:`,
    expiry: `${prefix}session-expiry`,
    throttle: (key: string) => `${prefix}throttle:${key}`,
    pending: (key: string) => `${prefix}throttle-pending:${key}`,
    knownClients: (username: string) => `${prefix}known-clients:${username}`,
    flow: (idHex: string) => `${prefix}oidc-flow:${idHex}`,
    seen: (idHex: string) => `${prefix}session-seen:${idHex}`,
    seenPrefix: `${prefix}session-seen:`,
    logState: `${prefix}session-log-state`,
    log: `${prefix}session-log`,
  };
}

export type Keys = ReturnType<typeof keys>;

interface RedisScript {
  /** How many leading arguments are key names. */
  readonly keys: number;
  readonly lua: string;
}

const SCRIPTS = {
  // KEYS: session, user-sessions:<user>, session-expiry, session-log-state, session-log. ARGV: id hex, username, created_at,
  // expires_at, ttl ms, keep, session prefix, client ip ('' unknown), user agent ('' unknown), sign-in
  // method ('' unknown), passkey handle ('' none), session-seen prefix. The
  // user's set drops members already expired and lives as long as its longest session; then the
  // user's oldest live sessions beyond `keep` end, in the same step (contract §9). Returns how many.
  create: {
    keys: 5,
    lua: `${LOG_DELETIONS}
      redis.call('HSET', KEYS[1], 'username', ARGV[2], 'created_at', ARGV[3], 'expires_at', ARGV[4])
      if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], 'client_ip', ARGV[8]) end
      if ARGV[9] ~= '' then redis.call('HSET', KEYS[1], 'user_agent', ARGV[9]) end
      if ARGV[10] ~= '' then redis.call('HSET', KEYS[1], 'method', ARGV[10]) end
      if ARGV[11] ~= '' then redis.call('HSET', KEYS[1], 'passkey', ARGV[11]) end
      redis.call('PEXPIRE', KEYS[1], ARGV[5])
      redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[3])
      redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
      if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[5]) then redis.call('PEXPIRE', KEYS[2], ARGV[5]) end
      redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
      local excess = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[6])
      local ended = {}
      if excess > 0 then
        -- Scored by expiry, which is creation plus the fixed lifetime: the lowest are the oldest.
        for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, excess)) do
          if id ~= ARGV[1] and #ended < excess then
            redis.call('DEL', ARGV[7] .. id)
            redis.call('ZREM', KEYS[2], id)
            redis.call('ZREM', KEYS[3], id)
            ended[#ended + 1] = id
          end
        end
      end
      log_deletions(KEYS[4], KEYS[5], ended, ARGV[12])
      return #ended`,
  },
  // KEYS: user-sessions:<user>. ARGV: now, session prefix, session-seen prefix. The user's live
  // sessions, flat: id hex, created_at, expires_at, last_seen, client ip, user agent, method, passkey
  // ('' for unknown) for each.
  list: {
    keys: 1,
    lua: `
      local out = {}
      for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf')) do
        local f = redis.call('HMGET', ARGV[2] .. id, 'created_at', 'expires_at', 'last_seen', 'client_ip', 'user_agent', 'method', 'passkey')
        if f[1] then
          f[3] = redis.call('GET', ARGV[3] .. id) or f[3]
          out[#out + 1] = id
          for i = 1, 7 do out[#out + 1] = f[i] or '' end
        end
      end
      return out`,
  },
  // KEYS: session, session-seen:<id>. ARGV: time seen. last_seen only moves forward; it lives as
  // long as the session, and a deleted session gets none. The session's own key is not written.
  touch: {
    keys: 2,
    lua: `
      local ttl = redis.call('PTTL', KEYS[1])
      if ttl == -2 then return 0 end
      local seen = tonumber(redis.call('GET', KEYS[2]) or '0')
      if tonumber(ARGV[1]) <= seen then return 1 end
      if ttl > 0 then redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl)
      else redis.call('SET', KEYS[2], ARGV[1]) end
      return 1`,
  },
  // KEYS: session, session-expiry, session-log-state, session-log. ARGV: id hex, user-sessions
  // prefix, session-seen prefix. 1 when the session was there.
  delete: {
    keys: 4,
    lua: `${LOG_DELETIONS}
      local username = redis.call('HGET', KEYS[1], 'username')
      redis.call('ZREM', KEYS[2], ARGV[1])
      if not username then return 0 end
      redis.call('DEL', KEYS[1])
      redis.call('ZREM', ARGV[2] .. username, ARGV[1])
      log_deletions(KEYS[3], KEYS[4], {ARGV[1]}, ARGV[3])
      return 1`,
  },
  // KEYS: user-sessions:<user>, session-expiry, session-log-state, session-log. ARGV: session
  // prefix, session-seen prefix. Returns the sessions deleted.
  revokeUser: {
    keys: 4,
    lua: `${LOG_DELETIONS}
      local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
      local n = 0
      for _, id in ipairs(ids) do
        n = n + redis.call('DEL', ARGV[1] .. id)
        redis.call('ZREM', KEYS[2], id)
      end
      redis.call('DEL', KEYS[1])
      log_deletions(KEYS[3], KEYS[4], ids, ARGV[2])
      return n`,
  },
  // KEYS: session-expiry, session-log-state, session-log. ARGV: now, batch size, session prefix,
  // user-sessions prefix, session-seen prefix. Deletes up to a batch of sessions expired at now
  // (expires_at <= now, as the SQL stores); returns how many. Logged too: another instance's clock
  // may be behind ours.
  purgeExpired: {
    keys: 3,
    lua: `${LOG_DELETIONS}
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
      log_deletions(KEYS[2], KEYS[3], ids, ARGV[5])
      return #ids`,
  },
  // KEYS: throttle:<key> (failures), throttle-pending:<key> (hash: guess id → "expires_at|fingerprint").
  // ARGV: fingerprint, guess id, limit (-1: none), now, window start (exclusive), expires_at, ttl ms.
  // Admits the guess when the distinct failures in the window plus the distinct other fingerprints
  // in flight (not among the failures) are fewer than the limit: {1}; else {0, pending, failure
  // times newest first}. Expired guesses (a crashed process) are dropped on the way.
  beginGuess: {
    keys: 2,
    lua: `
      local now = tonumber(ARGV[4])
      local entries = redis.call('HGETALL', KEYS[2])
      local seen, pending = {}, 0
      for i = 1, #entries, 2 do
        local expires, fingerprint = string.match(entries[i + 1], '^([^|]*)|(.*)$')
        if tonumber(expires) <= now then
          redis.call('HDEL', KEYS[2], entries[i])
        elseif fingerprint ~= ARGV[1] and not seen[fingerprint] then
          seen[fingerprint] = true
          local at = redis.call('ZSCORE', KEYS[1], fingerprint)
          if not at or tonumber(at) <= tonumber(ARGV[5]) then pending = pending + 1 end
        end
      end
      local limit = tonumber(ARGV[3])
      if limit >= 0 then
        local failures = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', '(' .. ARGV[5], 'WITHSCORES', 'LIMIT', 0, limit)
        if #failures / 2 + pending >= limit then
          local reply = {0, pending}
          for i = 2, #failures, 2 do reply[#reply + 1] = failures[i] end
          return reply
        end
      end
      redis.call('HSET', KEYS[2], ARGV[2], ARGV[6] .. '|' .. ARGV[1])
      if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[7]) then redis.call('PEXPIRE', KEYS[2], ARGV[7]) end
      return {1}`,
  },
  ...SESSION_LOG_SCRIPTS,
} as const satisfies Record<string, RedisScript>;

type ScriptName = keyof typeof SCRIPTS;

export type Scripts = Record<ScriptName, (keys: string[], args: (string | number)[]) => Promise<unknown>>;

/** Registers the Lua scripts (EVALSHA, falling back to EVAL after a Redis restart empties its cache). */
export function defineScripts(client: Redis): Scripts {
  const scripts = {} as Scripts;
  for (const [name, { keys, lua }] of Object.entries(SCRIPTS) as [
    ScriptName,
    (typeof SCRIPTS)[ScriptName],
  ][]) {
    client.defineCommand(`clubhouse_${name}`, { numberOfKeys: keys, lua });
    const command = (client as unknown as Record<string, (...args: (string | number)[]) => Promise<unknown>>)[
      `clubhouse_${name}`
    ]!;
    scripts[name] = (keys, args) => command.call(client, ...keys, ...args);
  }
  return scripts;
}
