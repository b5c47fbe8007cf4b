-- remove_job: delete one job from whichever container holds it, if its state is allowed. A job of
-- a batch removed before its outcome (any state but completed and failed) has a failure noted
-- for its batch in batch_pending (lib/batch_note.lua), as a cancel does, so the batch is not held
-- open for ever; the caller records it.
-- uses lib/handoff.lua
-- uses lib/groups.lua
-- uses lib/batch_note.lua
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
-- KEYS[16] groups      HASH grouped job id -> its group, or its group-ready member while it waits
-- KEYS[17] handoff     LIST entries an add handed to blocked workers, not taken yet
-- KEYS[18] delayed_priority HASH id -> priority, for delayed jobs that have one
-- KEYS[19] group_ready ZSET the grouped jobs ready to run (lib/groups.lua)
-- KEYS[20] group_turns ZSET group -> pass, the groups that may run
-- KEYS[21] group_parked ZSET group -> pass, ready groups paused or at their cap
-- KEYS[22] group_state HASH each group's settings and running count
-- KEYS[23] marker      LIST (a parked group that may run again wakes a worker)
-- KEYS[24] batch_pending ZSET batched outcomes on their way to their batch (lib/batch_note.lua)
-- ARGV[1] id
-- ARGV[2] allowed      which states may be removed: any | waiting | completed | failed | force
-- ARGV[3] max_events   stream cap
-- ARGV[4] older_ms     for completed/failed: only if finished at least this long ago (0: any)
-- Returns 1 when removed, 2 when removed and a failure noted for its batch, 0 when there was no
-- such job or it is in another state than allowed; an invalid_state error for an active job unless
-- allowed is force.
local id, allowed = ARGV[1], ARGV[2]
local state = nil
local score = nil
local list = nil
local _, member = emq_group_of(call('HGET', K.groups, id) or '')
if call('ZSCORE', K.active, id) then state = 'active'
elseif call('ZSCORE', K.delayed, id) then state = 'waiting'
elseif call('ZSCORE', K.prioritized, id) then state = 'waiting'
elseif call('ZSCORE', K.completed, id) then state = 'completed'; score = call('ZSCORE', K.completed, id)
elseif call('ZSCORE', K.failed, id) then state = 'failed'; score = call('ZSCORE', K.failed, id)
elseif call('SISMEMBER', K.stalled, id) == 1 then state = 'stalled'
elseif call('ZSCORE', K.waiting_children, id) then state = 'waiting-children'
elseif member then state = 'waiting'
-- Lists are searched from the right, where the oldest jobs sit (drain and obliterate take those
-- first, so each removal finds its job at once rather than scanning the whole list).
elseif call('LPOS', K.wait, id, 'RANK', -1) then state = 'waiting'; list = K.wait
elseif call('LPOS', K.paused, id, 'RANK', -1) then state = 'waiting'; list = K.paused
end
local existed = call('EXISTS', K.record) == 1
if state == nil and not existed then return 0 end
if state == 'active' and allowed == 'any' then
  fail('invalid_state', 'job ' .. id .. ' is active; wait for it to finish, or obliterate with force')
end
if allowed ~= 'any' and allowed ~= 'force' and state ~= allowed then return 0 end
local older = tonumber(ARGV[4])
if score and older > 0 and tonumber(score) > now_ms() - older then return 0 end
if list then call('LREM', list, -1, id) end
if member then call('ZREM', K.group_ready, member) end
-- An active grouped job frees its group's slot.
if state == 'active' then emq_group_left(K, {id}) end
local tag = emq_group_tag(K, id)
call('ZREM', K.active, id)
call('HDEL', K.leases, id)
call('ZREM', K.delayed, id)
call('ZREM', K.prioritized, id)
call('ZREM', K.completed, id)
call('ZREM', K.failed, id)
call('SREM', K.stalled, id)
call('ZREM', K.waiting_children, id)
call('HDEL', K.groups, id)
call('HDEL', K.delayed_priority, id)
if state == 'active' and call('LLEN', K.handoff) > 0 then
  -- A handed-over job nobody took yet: its entry must not reach a worker after the job is gone.
  for _, entry in ipairs(call('LRANGE', K.handoff, 0, -1)) do
    if emq_handoff_id(entry) == id then call('LREM', K.handoff, 1, entry) end
  end
end
local noted = false
if existed then
  if state ~= 'completed' and state ~= 'failed' then
    noted = emq_batch_pending(K, K.record, id, 'f', now_ms())
  end
  local dedup = call('HGET', K.record, 'dedup')
  if dedup and dedup ~= '' and call('HGET', K.dedup, dedup) == id then call('HDEL', K.dedup, dedup) end
  call('DEL', K.record, K.logs)
  call('HINCRBY', K.meta, 'gone', 1)
end
call('XADD', K.events, 'MAXLEN', '~', ARGV[3], '*', 'ev', 'removed', 'id', id, unpack(tag))
if noted then return 2 end
return 1
