-- job_state: read one job's record and the state it is in (which container holds it).
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] wait         LIST
-- KEYS[3] paused       LIST
-- KEYS[4] active       ZSET
-- KEYS[5] delayed      ZSET
-- KEYS[6] prioritized  ZSET
-- KEYS[7] completed    ZSET
-- KEYS[8] failed       ZSET
-- KEYS[9] stalled      SET
-- KEYS[10] waiting_children ZSET
-- ARGV[1] id
-- Returns {state, field, value, …}, or {} when there is no such job.
local id = ARGV[1]
local record = call('HGETALL', K.record)
if #record == 0 then return {} end
local state = 'unknown'
if call('ZSCORE', K.active, id) then state = 'active'
elseif call('ZSCORE', K.delayed, id) then state = 'delayed'
elseif call('ZSCORE', K.prioritized, id) then state = 'prioritized'
elseif call('ZSCORE', K.completed, id) then state = 'completed'
elseif call('ZSCORE', K.failed, id) then state = 'failed'
elseif call('SISMEMBER', K.stalled, id) == 1 then state = 'stalled'
elseif call('ZSCORE', K.waiting_children, id) then state = 'waiting-children'
elseif call('LPOS', K.wait, id) then state = 'waiting'
elseif call('LPOS', K.paused, id) then state = 'paused'
end
local out = {state}
for i = 1, #record do out[#out + 1] = record[i] end
return out
