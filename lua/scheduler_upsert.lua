-- scheduler_upsert: create or replace a job scheduler (every N ms), keeping its next due time when
-- it exists.
-- KEYS[1] schedulers   HASH scheduler id (user data) -> spec (JSON)
-- KEYS[2] due          ZSET scheduler id -> next due (server ms)
-- ARGV[1] scheduler    the scheduler id
-- ARGV[2] spec         JSON {name, data, opts, attempts, every_ms, limit, count}
-- ARGV[3] first_ms     delay of the first run from now
-- Returns 1 when created, 0 when replaced.
local existed = call('HEXISTS', KEYS[1], ARGV[1]) == 1
local spec = cjson.decode(ARGV[2])
if existed then
  local old = cjson.decode(call('HGET', KEYS[1], ARGV[1]))
  spec.count = old.count or 0
end
call('HSET', KEYS[1], ARGV[1], cjson.encode(spec))
call('ZADD', KEYS[2], 'NX', now_ms() + tonumber(ARGV[3]), ARGV[1])
return existed and 0 or 1
