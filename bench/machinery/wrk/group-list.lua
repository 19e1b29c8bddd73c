-- GET /api/group/ with `Cookie: sessionid=<id>`, rotating over the sessions of the load file
-- (wrk ... -s group-list.lua URL -- LOAD_FILE); each session's user belongs to 20 groups.
local common = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

common.rotate("/api/group/")
