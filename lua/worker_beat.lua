-- worker_beat: register or heartbeat one worker of the queue on the server's clock; prune lapsed ones.
-- KEYS[1] workers       ZSET worker id -> when its registration lapses (server ms)
-- KEYS[2] worker_info   HASH worker id -> its description (JSON)
-- ARGV[1] worker        the worker's id
-- ARGV[2] ttl_ms        how long the registration lasts without another beat
-- ARGV[3] info          the worker's description (JSON object: host, pid, language, concurrency, running)
-- Returns {server now ms, lapse ms}. started_ms is kept across beats while the registration lives.
local now = now_ms()
local id = ARGV[1]
local info = cjson.decode(ARGV[3])
local started = now
local prev = call('HGET', K.worker_info, id)
if prev and call('ZSCORE', K.workers, id) then
  local ok, old = pcall(cjson.decode, prev)
  if ok and type(old) == 'table' and tonumber(old.started_ms) then started = tonumber(old.started_ms) end
end
local lapsed = call('ZRANGEBYSCORE', K.workers, '-inf', '(' .. now, 'LIMIT', 0, 100)
for _, w in ipairs(lapsed) do
  call('HDEL', K.worker_info, w)
  call('ZREM', K.workers, w)
end
local lapse = now + tonumber(ARGV[2])
info.started_ms = started
info.beat_ms = now
info.lapse_ms = lapse
call('ZADD', K.workers, lapse, id)
call('HSET', K.worker_info, id, cjson.encode(info))
return {now, lapse}
