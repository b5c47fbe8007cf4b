-- schedulers_due: select the schedulers whose next run is due on the server's clock (the select
-- half; scheduler_fire.lua then fires each, checking that its due time is still the one read here).
-- KEYS[1] schedule_due ZSET scheduler id -> next due (server ms)
-- KEYS[2] schedulers   HASH scheduler id -> spec (JSON)
-- ARGV[1] limit        most schedulers returned
-- Returns {ms until the next scheduler is due or -1, server now (ms), id, due (ms), spec, …}.
local now = now_ms()
local due = call('ZRANGEBYSCORE', K.schedule_due, '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[1]))
local head = call('ZRANGE', K.schedule_due, 0, 0, 'WITHSCORES')
local out = {head[2] and math.max(0, tonumber(head[2]) - now) or -1, now}
for i = 1, #due, 2 do
  local spec = call('HGET', K.schedulers, due[i])
  if spec then
    out[#out + 1] = due[i]
    out[#out + 1] = tonumber(due[i + 1])
    out[#out + 1] = spec
  end
end
return out
