-- scheduler_fire: enqueue one run of a due scheduler and move its due time on, exactly once however
-- many workers race (the due check and the move are one atomic step).
-- KEYS[1] schedulers   HASH scheduler id -> spec (JSON)
-- KEYS[2] due          ZSET scheduler id -> next due (server ms)
-- KEYS[3] record       emq:{q}:<id> of the job to create, HASH
-- KEYS[4] wait         LIST
-- KEYS[5] paused       LIST
-- KEYS[6] meta         HASH
-- KEYS[7] events       STREAM
-- KEYS[8] marker       LIST
-- ARGV[1] scheduler    the scheduler id
-- ARGV[2] id           a freshly minted job id for this run
-- ARGV[3] max_events   stream cap
-- Returns 1 when a run was enqueued, 0 when the scheduler was not due (another worker fired it).
local sid, id = ARGV[1], ARGV[2]
local now = now_ms()
local due = call('ZSCORE', KEYS[2], sid)
local raw = call('HGET', KEYS[1], sid)
if not due or tonumber(due) > now or not raw then return 0 end
local spec = cjson.decode(raw)
local fields = {'name', spec.name, 'data', spec.data, 'created_ms', now, 'scheduler', sid}
if spec.opts ~= '{}' then fields[#fields + 1] = 'opts'; fields[#fields + 1] = spec.opts end
if spec.attempts ~= 1 then fields[#fields + 1] = 'attempts'; fields[#fields + 1] = spec.attempts end
call('HSET', KEYS[3], unpack(fields))
call('HINCRBY', KEYS[6], 'added', 1)
local paused = call('HGET', KEYS[6], 'paused') == '1'
call('LPUSH', paused and KEYS[5] or KEYS[4], id)
if not paused then call('LPUSH', KEYS[8], '1') end
call('XADD', KEYS[7], 'MAXLEN', '~', ARGV[3], '*', 'ev', 'added', 'id', id, 'scheduler', sid)
spec.count = (spec.count or 0) + 1
if spec.limit and spec.limit > 0 and spec.count >= spec.limit then
  call('HDEL', KEYS[1], sid)
  call('ZREM', KEYS[2], sid)
  return 1
end
local next_due = tonumber(due) + spec.every_ms
if next_due <= now then next_due = now + spec.every_ms end
call('HSET', KEYS[1], sid, cjson.encode(spec))
call('ZADD', KEYS[2], next_due, sid)
return 1
