-- GET /api/group/{id} with `Cookie: sessionid=<id>`, rotating over the sessions of the load file
-- (wrk ... -s group-detail.lua URL -- LOAD_FILE); the id is one of the groups of the session's
-- user, a different one on each pass over the sessions.
local common = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local sessions, n, i, pass

function init(args)
  sessions = common.read_sessions(args[1])
  n = #sessions
  i = common.start(n)
  pass = 0
end

function request()
  i = i % n + 1
  if i == 1 then
    pass = pass + 1
  end
  local session = sessions[i]
  local group = session.groups[(pass + i) % #session.groups + 1]
  return wrk.format("GET", "/api/group/" .. group, { Cookie = "sessionid=" .. session.id })
end
