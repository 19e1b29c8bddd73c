// The deletion log of the Redis session store: with the key events (key-events.ts), what makes each
// instance's session memory (session-memory.ts) exact. Under the prefix P:
//
//   P session-log-state    hash {epoch, seq}: epoch, made once (from Redis's clock) when missing, so
//                          that a Redis that lost its data (a restart without persistence, FLUSHALL,
//                          an eviction) shows as another epoch; seq, the number of entries ever logged
//   P session-log          list: one entry per deleting script, the hex hashes of the sessions it
//                          deleted, concatenated; the newest LOG_ENTRIES are kept, for LOG_TTL_MS
//                          after the last deletion (as SQLite's log, a dead session's hash is not
//                          kept for long; an instance that catches up after that, with entries
//                          it never read gone, empties its memory)
//
// Every script that deletes sessions (scripts.ts: create beyond the cap, delete, revokeUser,
// purgeExpired) logs them with LOG_DELETIONS, in the same script: a deletion and its entry are one
// atomic step. Redis runs scripts one at a time, so seq orders the entries as they happened.
// A session's expiry is never moved by the service (and a sighting is written to a key of its own,
// not the session's: scripts.ts), so an expiry needs no entry; what anyone else does to a session
// key (a DEL, an eviction, a changed field) reaches the memories as a key event instead
// (key-events.ts).

/** Entries kept; an instance that missed more than these since its last catch-up empties its memory. */
const LOG_ENTRIES = 10_000;
/** How long the log outlives its last entry (sqlite/sessions.ts: DELETION_LOG_RETENTION_MS). */
const LOG_TTL_MS = 10 * 60 * 1000;
/** Characters of one hash in an entry (SHA-256 in hex): entries are their concatenation. */
export const HASH_HEX = 64;

/**
 * Lua: `log_deletions(state, log, ids, seen_prefix)` appends the hashes in `ids` (a table of hex
 * strings) as one entry, and deletes their last-seen keys (scripts.ts); nothing for none. Prepended
 * to the deleting scripts.
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
      local function log_deletions(state, log, ids, seen_prefix)
        if #ids == 0 then return end
        for _, id in ipairs(ids) do redis.call('DEL', seen_prefix .. id) end
        log_epoch(state)
        redis.call('HINCRBY', state, 'seq', 1)
        redis.call('RPUSH', log, table.concat(ids))
        redis.call('LTRIM', log, -${LOG_ENTRIES}, -1)
        redis.call('PEXPIRE', log, ${LOG_TTL_MS})
      end`;

export const SESSION_LOG_SCRIPTS = {
  // KEYS: session-log-state, session-log, the barrier key. ARGV: the seq last read (-1: none).
  // Returns the page after it (freshness/change-log.ts): {epoch, seq, first ('' when the log keeps
  // no entry), the mark at the seq read ('' when not kept), the mark of the newest entry, the entries
  // after the seq read (none when some of them are gone: the reader then sees `first` past them)}. A
  // mark is an entry's first hash. Last, it writes and deletes the barrier key, whose "del" event
  // tells the instance that every key event before this script has reached it (key-events.ts). The
  // SET has no expiry: with one it would publish an "expire" event too (class g), which nobody
  // needs, and the DEL after it in the same script always runs.
  sessionLogPage: {
    keys: 3,
    lua: `${LOG_DELETIONS}
      local epoch = log_epoch(KEYS[1])
      local seq = tonumber(redis.call('HGET', KEYS[1], 'seq') or '0')
      local seen = tonumber(ARGV[1])
      local kept = redis.call('LLEN', KEYS[2])
      local function mark(at)
        local back = seq - at + 1
        if at < 1 or back < 1 or back > kept then return '' end
        return string.sub(redis.call('LINDEX', KEYS[2], -back), 1, ${HASH_HEX})
      end
      local reply = {epoch, tostring(seq), kept > 0 and tostring(seq - kept + 1) or '', mark(seen), mark(seq)}
      if seen >= 0 and seen < seq and seq - seen <= kept then
        for _, entry in ipairs(redis.call('LRANGE', KEYS[2], seen - seq, -1)) do reply[#reply + 1] = entry end
      end
      redis.call('SET', KEYS[3], '1')
      redis.call('DEL', KEYS[3])
      return reply`,
  },
  // KEYS: session, session-log-state. The session's username and expires_at, with the log's epoch and
  // seq at the same instant ('' when missing): memory keeps it only if no later entry was read.
  sessionRead: {
    keys: 2,
    lua: `
      local f = redis.call('HMGET', KEYS[1], 'username', 'expires_at')
      local s = redis.call('HMGET', KEYS[2], 'epoch', 'seq')
      return {f[1] or '', f[2] or '', s[1] or '', s[2] or '0'}`,
  },
} as const;
