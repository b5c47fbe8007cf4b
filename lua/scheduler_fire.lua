-- scheduler_fire: enqueue one run of a due scheduler and move its due time on, exactly once however
-- many workers race: the run is enqueued only while the scheduler's revision is still the one the
-- caller read with its due time (compare-and-set; every step that moves the due time bumps it), and
-- the due time moves in the same atomic step. A run with a priority goes to prioritized.
-- uses lib/groups.lua
-- uses lib/ready.lua
-- KEYS[1] schedulers   HASH scheduler id -> spec (JSON)
-- KEYS[2] schedule_due ZSET scheduler id -> next due (server ms)
-- KEYS[3] record       emq:{q}:<id> of the job to create, HASH
-- KEYS[4] wait         LIST
-- KEYS[5] paused       LIST
-- KEYS[6] meta         HASH
-- KEYS[7] events       STREAM
-- KEYS[8] marker       LIST
-- KEYS[9] groups       HASH grouped job id -> its group (lib/groups.lua)
-- KEYS[10] prioritized ZSET
-- KEYS[11] group_ready ZSET the grouped jobs ready to run
-- KEYS[12] group_turns ZSET group -> pass, the groups that may run
-- KEYS[13] group_parked ZSET group -> pass, ready groups paused or at their cap
-- ARGV[1] scheduler    the scheduler id
-- ARGV[2] id           a freshly minted job id for this run
-- ARGV[3] max_events   stream cap
-- ARGV[4] rev          the spec's revision the caller read (from schedulers_due.lua)
-- ARGV[5] delay_ms     cron only: from the stored due time to the next (or, unprimed, the first)
--                      occurrence, computed by the caller from that due time and the server's now
-- Returns 1 when a run was enqueued, 0 when not (not due, fired by another caller, primed, ended).
local sid, id = ARGV[1], ARGV[2]
local now = now_ms()
local due = call('ZSCORE', K.schedule_due, sid)
local raw = call('HGET', K.schedulers, sid)
if not due or not raw then return 0 end
due = tonumber(due)
local spec = cjson.decode(raw)
if due > now or (spec.rev or 0) ~= tonumber(ARGV[4]) then return 0 end
spec.rev = (spec.rev or 0) + 1
local function finish()
  call('HDEL', K.schedulers, sid)
  call('ZREM', K.schedule_due, sid)
end
if spec.cron and not spec.primed then
  local first = due + tonumber(ARGV[5])
  if spec.end_ms and first > spec.end_ms then finish(); return 0 end
  spec.primed = true
  call('HSET', K.schedulers, sid, cjson.encode(spec))
  call('ZADD', K.schedule_due, first, sid)
  return 0
end
if spec.end_ms and due > spec.end_ms then finish(); return 0 end
local fields = {'name', spec.name, 'data', spec.data, 'created_ms', now, 'scheduler', sid, 'due_ms', due}
if spec.opts ~= '{}' then fields[#fields + 1] = 'opts'; fields[#fields + 1] = spec.opts end
if spec.attempts ~= 1 then fields[#fields + 1] = 'attempts'; fields[#fields + 1] = spec.attempts end
if spec.priority then fields[#fields + 1] = 'priority'; fields[#fields + 1] = spec.priority end
call('HSET', K.record, unpack(fields))
if spec.group then
  call('HSET', K.record, 'group', spec.group)
  call('HSET', K.groups, id, spec.group)
end
call('HINCRBY', K.meta, 'added', 1)
local paused = call('HGET', K.meta, 'paused') == '1'
emq_ready(K, {id}, {spec.priority}, false, paused)
if not paused then call('LPUSH', K.marker, '1') end
call('XADD', K.events, 'MAXLEN', '~', ARGV[3], '*', 'ev', 'added', 'id', id, 'scheduler', sid, unpack(emq_group_tag(K, id)))
spec.count = (spec.count or 0) + 1
if spec.limit and spec.limit > 0 and spec.count >= spec.limit then finish(); return 1 end
local next_due
if spec.cron then
  next_due = due + math.max(1, tonumber(ARGV[5]))
else
  next_due = due + spec.every_ms
  if next_due <= now then next_due = now + spec.every_ms end
end
if spec.end_ms and next_due > spec.end_ms then finish(); return 1 end
call('HSET', K.schedulers, sid, cjson.encode(spec))
call('ZADD', K.schedule_due, next_due, sid)
return 1
