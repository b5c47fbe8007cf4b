-- fail: a leased job's handler failed; retry it (after a backoff) or move it to failed.
-- uses lib/groups.lua
-- uses lib/ready.lua
-- uses lib/batch_note.lua
-- uses lib/finish.lua
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] logs         emq:{q}:<id>:logs, LIST
-- KEYS[3] active       ZSET
-- KEYS[4] leases       HASH
-- KEYS[5] wait         LIST
-- KEYS[6] paused       LIST
-- KEYS[7] delayed      ZSET
-- KEYS[8] failed       ZSET id -> finish time
-- KEYS[9] dedup        HASH
-- KEYS[10] meta        HASH
-- KEYS[11] events      STREAM
-- KEYS[12] marker      LIST
-- KEYS[13] metrics     HASH finished counts per minute
-- KEYS[14] groups      HASH grouped job id -> its group (lib/groups.lua)
-- KEYS[15] prioritized ZSET
-- KEYS[16] delayed_priority HASH id -> priority, for delayed jobs that have one
-- KEYS[17] group_ready ZSET the grouped jobs ready to run (lib/groups.lua)
-- KEYS[18] group_turns ZSET group -> pass, the groups that may run
-- KEYS[19] group_parked ZSET group -> pass, ready groups paused or at their cap
-- KEYS[20] group_state HASH each group's settings and running count
-- KEYS[21] dead_letters ZSET failed jobs on their way to their dead-letter queue (lib/finish.lua)
-- KEYS[22] batch_pending ZSET batched outcomes on their way to their batch (lib/batch_note.lua)
-- ARGV[1] id
-- ARGV[2] token        the lease token the worker holds
-- ARGV[3] failure      JSON text {code, message, stack}
-- ARGV[4] backoff_ms   wait before the retry
-- ARGV[5] retry        "1" retry while attempts remain, "0" unrecoverable
-- ARGV[6] keep         "1" keep the record in failed, "0" delete it
-- ARGV[7] max_events   stream cap
-- ARGV[8] attempts     the attempts the worker ran the job with, used when the record stores
--                      none (the queue's default, core/src/job_defaults.rs; absent: 1)
-- Returns 'retry', 'failed', or 'dead_letter' (failed for good, with a dead-letter queue to move
-- to: core/src/dead_letter.rs), or a lease_lost error.
-- The 'retrying' and 'failed' events carry the failure's code and its message, cut to
-- EVENT_VALUE_CAP bytes (the record keeps it whole, with the stack).
local EVENT_VALUE_CAP = 512
local id = ARGV[1]
local lease = emq_take_lease(K, id, ARGV[2])
emq_group_left(K, {id})
local tag = emq_group_tag(K, id)
local now = now_ms()
local atts = call('HINCRBY', K.record, 'atts', 1)
local ok, decoded = pcall(cjson.decode, ARGV[3])
local fcode, fmessage = 'handler_failed', ''
if ok and type(decoded) == 'table' then
  if type(decoded.code) == 'string' then fcode = decoded.code end
  if type(decoded.message) == 'string' then fmessage = string.sub(decoded.message, 1, EVENT_VALUE_CAP) end
end
local most = tonumber(call('HGET', K.record, 'attempts') or ARGV[8] or '1')
call('HSET', K.record, 'failure', ARGV[3], 'processed_ms', string.match(lease, '|(%d+)'))
if ARGV[5] == '1' and atts < most then
  -- The retry keeps the job's priority: at the front of it, or from when its backoff ends.
  local priority = call('HGET', K.record, 'priority')
  local backoff = tonumber(ARGV[4])
  if backoff > 0 then
    call('ZADD', K.delayed, now + backoff, id)
    if priority then call('HSET', K.delayed_priority, id, priority) end
  else
    local paused = call('HGET', K.meta, 'paused') == '1'
    emq_ready(K, {id}, {priority}, true, paused)
    if not paused then call('LPUSH', K.marker, '1') end
  end
  if call('HEXISTS', K.meta, 'concurrency') == 1 then call('LPUSH', K.marker, '1') end
  call('XADD', K.events, 'MAXLEN', '~', ARGV[7], '*', 'ev', 'retrying', 'id', id, 'atts', atts,
    'code', fcode, 'message', fmessage, unpack(tag))
  return 'retry'
end
emq_group_forget(K, id)
local dead = emq_fail_for_good(K, id, now, ARGV[6] == '1', atts, fcode, fmessage, ARGV[7], tag)
if call('HEXISTS', K.meta, 'concurrency') == 1 then call('LPUSH', K.marker, '1') end
if dead then return 'dead_letter' end
return 'failed'
