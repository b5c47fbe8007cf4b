-- remove_job: delete one job from whichever container holds it, if its state is allowed.
-- uses lib/handoff.lua
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] logs         emq:{q}:<id>:logs, LIST
-- KEYS[3] wait         LIST
-- KEYS[4] paused       LIST
-- KEYS[5] active       ZSET
-- KEYS[6] leases       HASH
-- KEYS[7] delayed      ZSET
-- KEYS[8] prioritized  ZSET
-- KEYS[9] completed    ZSET
-- KEYS[10] failed      ZSET
-- KEYS[11] stalled     SET
-- KEYS[12] waiting_children ZSET
-- KEYS[13] dedup       HASH
-- KEYS[14] meta        HASH
-- KEYS[15] events      STREAM
-- KEYS[16] groups      HASH job id -> group key (a waiting grouped job's entry)
-- KEYS[17] handoff     LIST entries an add handed to blocked workers, not taken yet
-- KEYS[18] delayed_priority HASH id -> priority, for delayed jobs that have one
-- ARGV[1] id
-- ARGV[2] allowed      which states may be removed: any | waiting | completed | failed | force
-- ARGV[3] max_events   stream cap
-- ARGV[4] older_ms     for completed/failed: only if finished at least this long ago (0: any)
-- Returns 1 when removed, 0 when there was no such job or it is in another state than allowed;
-- an invalid_state error for an active job unless allowed is force.
local id, allowed = ARGV[1], ARGV[2]
local state = nil
local score = nil
local list = nil
if call('ZSCORE', KEYS[5], id) then state = 'active'
elseif call('ZSCORE', KEYS[7], id) then state = 'waiting'
elseif call('ZSCORE', KEYS[8], id) then state = 'waiting'
elseif call('ZSCORE', KEYS[9], id) then state = 'completed'; score = call('ZSCORE', KEYS[9], id)
elseif call('ZSCORE', KEYS[10], id) then state = 'failed'; score = call('ZSCORE', KEYS[10], id)
elseif call('SISMEMBER', KEYS[11], id) == 1 then state = 'stalled'
elseif call('ZSCORE', KEYS[12], id) then state = 'waiting-children'
-- Lists are searched from the right, where the oldest jobs sit (drain and obliterate take those
-- first, so each removal finds its job at once rather than scanning the whole list).
elseif call('LPOS', KEYS[3], id, 'RANK', -1) then state = 'waiting'; list = KEYS[3]
elseif call('LPOS', KEYS[4], id, 'RANK', -1) then state = 'waiting'; list = KEYS[4]
end
local existed = call('EXISTS', KEYS[1]) == 1
if state == nil and not existed then return 0 end
if state == 'active' and allowed == 'any' then
  fail('invalid_state', 'job ' .. id .. ' is active; wait for it to finish, or obliterate with force')
end
if allowed ~= 'any' and allowed ~= 'force' and state ~= allowed then return 0 end
local older = tonumber(ARGV[4])
if score and older > 0 and tonumber(score) > now_ms() - older then return 0 end
if list then call('LREM', list, -1, id) end
call('ZREM', KEYS[5], id)
call('HDEL', KEYS[6], id)
call('ZREM', KEYS[7], id)
call('ZREM', KEYS[8], id)
call('ZREM', KEYS[9], id)
call('ZREM', KEYS[10], id)
call('SREM', KEYS[11], id)
call('ZREM', KEYS[12], id)
call('HDEL', KEYS[16], id)
call('HDEL', KEYS[18], id)
if state == 'active' and call('LLEN', KEYS[17]) > 0 then
  -- A handed-over job nobody took yet: its entry must not reach a worker after the job is gone.
  for _, entry in ipairs(call('LRANGE', KEYS[17], 0, -1)) do
    if emq_handoff_id(entry) == id then call('LREM', KEYS[17], 1, entry) end
  end
end
if existed then
  local dedup = call('HGET', KEYS[1], 'dedup')
  if dedup and dedup ~= '' and call('HGET', KEYS[13], dedup) == id then call('HDEL', KEYS[13], dedup) end
  call('DEL', KEYS[1], KEYS[2])
  call('HINCRBY', KEYS[14], 'gone', 1)
end
call('XADD', KEYS[15], 'MAXLEN', '~', ARGV[3], '*', 'ev', 'removed', 'id', id)
return 1
