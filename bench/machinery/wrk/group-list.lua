-- GET /api/group/ with `Cookie: sessionid=<id>`, rotating over the sessions of the load file
-- (wrk ... -s group-list.lua URL -- LOAD_FILE); each session's user belongs to 20 groups.
local common = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local requests, n, i

function init(args)
  requests = {}
  for k, session in ipairs(common.read_sessions(args[1])) do
    requests[k] = wrk.format("GET", "/api/group/", { Cookie = "sessionid=" .. session.id })
  end
  n = #requests
  i = common.start(n)
end

function request()
  i = i % n + 1
  return requests[i]
end
