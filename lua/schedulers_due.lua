-- schedulers_due: select the schedulers whose next run is due on the server's clock (the select
-- half; scheduler_fire.lua then fires each, re-checking that it is still due).
-- KEYS[1] due          ZSET scheduler id -> next due (server ms)
-- ARGV[1] limit        most ids returned
-- Returns {ms until the next scheduler is due or -1, id, …}.
local now = now_ms()
local ids = call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local head = call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local out = {head[2] and math.max(0, tonumber(head[2]) - now) or -1}
for _, id in ipairs(ids) do out[#out + 1] = id end
return out
