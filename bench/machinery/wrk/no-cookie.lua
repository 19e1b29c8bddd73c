-- GET /api/auth/check without a cookie (403 `""` from clubhouse). No request() function: wrk sends
-- its single static request for the URL, the cheapest load there is.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
