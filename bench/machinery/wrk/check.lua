-- GET /api/auth/check with `Cookie: sessionid=<id>`, rotating over every session of the load file
-- (wrk ... -s check.lua URL -- LOAD_FILE). The requests are built once, in init().
local common = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local requests, n, i

function init(args)
  requests = {}
  for k, session in ipairs(common.read_sessions(args[1])) do
    requests[k] = wrk.format("GET", "/api/auth/check", { Cookie = "sessionid=" .. session.id })
  end
  n = #requests
  i = common.start(n)
end

function request()
  i = i % n + 1
  return requests[i]
end
