-- GET /api/auth/check with `Cookie: sessionid=<id>`, rotating over every session of the load file
-- (wrk ... -s check.lua URL -- LOAD_FILE). The requests are built once, in init().
local common = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

common.rotate("/api/auth/check")
