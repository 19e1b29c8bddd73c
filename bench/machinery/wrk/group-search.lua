-- GET /api/groups?q=group+001 (contract §13: the search) with `Cookie: sessionid=<id>`, rotating over
-- the sessions of the load file (wrk ... -s group-search.lua URL -- LOAD_FILE). Of the 100 000 seeded
-- groups ("Group 000001" …), the 1 000 named "Group 001xxx" match: 1 %, answered 50 a page.
local common = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

common.rotate("/api/groups?q=group+001")
