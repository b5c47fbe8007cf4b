-- workers_list: the queue's live workers (registration not lapsed on the server's clock); writes nothing.
-- KEYS[1] workers       ZSET worker id -> when its registration lapses (server ms)
-- KEYS[2] worker_info   HASH worker id -> its description (JSON)
-- ARGV[1] limit         most workers returned
-- Returns {server now ms, id1, info1, id2, info2, ...}, soonest lapse first.
local now = now_ms()
local ids = call('ZRANGEBYSCORE', K.workers, now, '+inf', 'LIMIT', 0, tonumber(ARGV[1]))
local out = {now}
for _, id in ipairs(ids) do
  local info = call('HGET', K.worker_info, id)
  if info then
    out[#out + 1] = id
    out[#out + 1] = info
  end
end
return out
