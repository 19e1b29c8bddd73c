// The deletion log of the Redis session store (issue 24): what makes each instance's in-memory
// sessions (session-cache.ts) exact. Under the prefix P:
//
//   P session-log-state    hash {epoch, seq}: epoch, made once (from Redis's clock) when missing, so
//                          that a Redis that lost its data (a restart without persistence, FLUSHALL,
//                          an eviction) shows as another epoch; seq, the number of entries ever logged
//   P session-log          list: one entry per deleting script, the hex hashes of the sessions it
//                          deleted, concatenated; the newest LOG_ENTRIES are kept, for LOG_TTL_MS
//                          after the last deletion (as SQLite's log, a dead session's hash is not
//                          kept for long; an instance that looks after that empties its cache)
//
// Every script that deletes sessions (scripts.ts: create beyond the cap, delete, revokeUser,
// purgeExpired) logs them with LOG_DELETIONS, in the same script: a deletion and its entry are one
// atomic step. Redis runs scripts one at a time, so seq orders the entries as they happened.
// A session's expiry is never extended (touch writes last_seen only), so an expiry needs no entry.

/** Entries kept; an instance that missed more than these since its last look empties its cache. */
const LOG_ENTRIES = 10_000;
/** How long the log outlives its last entry (sqlite/sessions.ts: DELETION_LOG_RETENTION_MS). */
const LOG_TTL_MS = 10 * 60 * 1000;

/**
 * Lua: `log_deletions(state, log, ids)` appends the hashes in `ids` (a table of hex strings) as one
 * entry; nothing for none. Prepended to the deleting scripts.
 */
export const LOG_DELETIONS = `
      local function log_epoch(state)
        local epoch = redis.call('HGET', state, 'epoch')
        if epoch then return epoch end
        local t = redis.call('TIME')
        epoch = t[1] .. '.' .. t[2]
        redis.call('HSET', state, 'epoch', epoch)
        return epoch
      end
      local function log_deletions(state, log, ids)
        if #ids == 0 then return end
        log_epoch(state)
        redis.call('HINCRBY', state, 'seq', 1)
        redis.call('RPUSH', log, table.concat(ids))
        redis.call('LTRIM', log, -${LOG_ENTRIES}, -1)
        redis.call('PEXPIRE', log, ${LOG_TTL_MS})
      end`;

export const SESSION_LOG_SCRIPTS = {
  // KEYS: session-log-state, session-log. ARGV: the seq last read (-1: none). Returns {epoch, seq,
  // 'ok', entries after it…}, or {epoch, seq, 'lost'} when entries after it were trimmed away.
  sessionLog: {
    keys: 2,
    lua: `${LOG_DELETIONS}
      local epoch = log_epoch(KEYS[1])
      local seq = tonumber(redis.call('HGET', KEYS[1], 'seq') or '0')
      local seen = tonumber(ARGV[1])
      if seen < 0 or seen >= seq then return {epoch, tostring(seq), 'ok'} end
      local n = seq - seen
      if n > redis.call('LLEN', KEYS[2]) then return {epoch, tostring(seq), 'lost'} end
      local reply = {epoch, tostring(seq), 'ok'}
      for _, entry in ipairs(redis.call('LRANGE', KEYS[2], -n, -1)) do reply[#reply + 1] = entry end
      return reply`,
  },
  // KEYS: session, session-log-state. The session's username and expires_at, with the log's epoch and
  // seq at the same instant ('' when missing): a cache keeps it only if no later entry was read.
  sessionRead: {
    keys: 2,
    lua: `
      local f = redis.call('HMGET', KEYS[1], 'username', 'expires_at')
      local s = redis.call('HMGET', KEYS[2], 'epoch', 'seq')
      return {f[1] or '', f[2] or '', s[1] or '', s[2] or '0'}`,
  },
} as const;
