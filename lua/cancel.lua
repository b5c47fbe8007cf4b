-- cancel: a job that has not run yet does not run (it ends in failed, its failure code
-- 'cancelled' with the reason; a job of a batch has that outcome noted for its batch); for a running job the request goes on the cancels stream, which
-- every worker follows, and the worker holding it stops its handler and fails it the same way.
-- uses lib/groups.lua
-- uses lib/batch_note.lua
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] wait         LIST
-- KEYS[3] paused       LIST
-- KEYS[4] active       ZSET
-- KEYS[5] delayed      ZSET
-- KEYS[6] prioritized  ZSET
-- KEYS[7] stalled      SET
-- KEYS[8] waiting_children ZSET
-- KEYS[9] failed       ZSET id -> finish time
-- KEYS[10] dedup       HASH
-- KEYS[11] meta        HASH
-- KEYS[12] events      STREAM
-- KEYS[13] metrics     HASH finished counts per minute
-- KEYS[14] groups      HASH grouped job id -> its group, or its group-ready member while it waits
-- KEYS[15] delayed_priority HASH id -> priority, for delayed jobs that have one
-- KEYS[16] cancels     STREAM cancel requests for running jobs (id, reason)
-- KEYS[17] leases      HASH (a stalled job whose run never started holds a mark there)
-- KEYS[18] group_ready ZSET the grouped jobs ready to run (lib/groups.lua)
-- KEYS[19] batch_pending ZSET batched outcomes on their way to their batch (lib/batch_note.lua)
-- ARGV[1] id
-- ARGV[2] reason       free text, kept in the failure
-- ARGV[3] max_events   stream cap (the cancels stream keeps about a tenth of it, at least 100)
-- Returns 'cancelled' (it had not run: now failed), 'running' (its worker is told), 'finished'
-- (completed or failed already: nothing done) or 'missing' (no such job).
local id, reason = ARGV[1], ARGV[2]
if call('EXISTS', K.record) == 0 then return 'missing' end
local message = 'the job was cancelled'
if reason ~= '' then message = message .. ': ' .. reason end
if call('ZSCORE', K.active, id) then
  call('HSET', K.record, 'cancel', reason)
  local cap = math.max(100, math.floor(tonumber(ARGV[3]) / 10))
  call('XADD', K.cancels, 'MAXLEN', '~', cap, '*', 'id', id, 'reason', reason)
  call('XADD', K.events, 'MAXLEN', '~', ARGV[3], '*', 'ev', 'cancelling', 'id', id, 'reason', reason,
    unpack(emq_group_tag(K, id)))
  return 'running'
end
if call('ZSCORE', K.failed, id) then return 'finished' end
local found = call('ZREM', K.delayed, id) + call('ZREM', K.prioritized, id) + call('SREM', K.stalled, id)
  + call('ZREM', K.waiting_children, id)
if found == 0 then
  -- Waiting in its group.
  local v = call('HGET', K.groups, id)
  local _, member = emq_group_of(v or '')
  if member then found = call('ZREM', K.group_ready, member) end
end
if found == 0 then found = call('LREM', K.wait, -1, id) end
if found == 0 then found = call('LREM', K.paused, -1, id) end
-- Completed (or in no container at all): nothing to cancel.
if found == 0 then return 'finished' end
call('HDEL', K.delayed_priority, id)
local tag = emq_group_tag(K, id)
call('HDEL', K.groups, id)
if call('HGET', K.leases, id) == '-|a' then call('HDEL', K.leases, id) end
local now = now_ms()
call('HSET', K.record, 'cancel', reason, 'finished_ms', now,
  'failure', cjson.encode({code = 'cancelled', message = message}))
call('ZADD', K.failed, now, id)
emq_batch_pending(K, K.record, id, 'f', now)
local dedup = call('HGET', K.record, 'dedup')
if dedup and dedup ~= '' and call('HGET', K.dedup, dedup) == id then call('HDEL', K.dedup, dedup) end
call('HINCRBY', K.metrics, 'f:' .. math.floor(now / 60000), 1)
call('XADD', K.events, 'MAXLEN', '~', ARGV[3], '*', 'ev', 'failed', 'id', id, 'code', 'cancelled',
  'message', string.sub(message, 1, 512), 'reason', reason, unpack(tag))
return 'cancelled'
