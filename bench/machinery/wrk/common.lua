-- Shared by the wrk scripts of bench/run.ts. The load file has one line per session:
-- `<raw session id> <group id> <group id> ...` (the groups of that session's user).
local M = {}

local thread_count = 0

-- Runs in wrk's main state, once per thread, before the thread's init(): gives each thread an id
-- so the threads start at different places in the rotation.
function setup(thread)
  thread:set("tid", thread_count)
  thread_count = thread_count + 1
end

function M.read_sessions(path)
  local sessions = {}
  for line in io.lines(path) do
    local fields = {}
    for token in line:gmatch("%S+") do
      fields[#fields + 1] = token
    end
    if #fields > 0 then
      sessions[#sessions + 1] = { id = fields[1], groups = { select(2, unpack(fields)) } }
    end
  end
  assert(#sessions > 0, "no sessions in " .. path)
  return sessions
end

-- Where this thread starts in a rotation of n entries.
function M.start(n)
  return ((tid or 0) * 4999) % n
end

-- Defines init() and request() for a load that sends GET `path` with each session's cookie, the
-- requests built once in init(), rotating over every session of the load file (args[1]).
function M.rotate(path)
  local requests, n, i
  function init(args)
    requests = {}
    for k, session in ipairs(M.read_sessions(args[1])) do
      requests[k] = wrk.format("GET", path, { Cookie = "sessionid=" .. session.id })
    end
    n = #requests
    i = M.start(n)
  end
  function request()
    i = i % n + 1
    return requests[i]
  end
end

-- One parseable line. summary.errors.status counts responses with status > 399 (wrk's own rule);
-- counting statuses in response() instead would slow wrk down.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d rps=%.1f p50_us=%.0f p99_us=%.0f mean_us=%.0f max_us=%.0f non2xx=%d connect_errors=%d read_errors=%d write_errors=%d timeouts=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6), latency:percentile(50), latency:percentile(99), latency.mean,
    latency.max, e.status, e.connect, e.read, e.write, e.timeout))
end

return M
