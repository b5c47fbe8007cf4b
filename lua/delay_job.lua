-- delay_job: a running job's handler puts it back to delayed for a duration (BullMQ's
-- moveToDelayed / DelayedError, River's snooze). Due at the server's now + delay_ms; the run counts
-- as an attempt only when asked. The lease must be the caller's. The job keeps its priority (beside
-- it in delayed_priority) and waits under its group's limit again once due.
-- uses lib/groups.lua
-- uses lib/batch_note.lua
-- uses lib/finish.lua
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] active       ZSET
-- KEYS[3] leases       HASH
-- KEYS[4] delayed      ZSET id -> due time
-- KEYS[5] delayed_priority HASH id -> priority, for delayed jobs that have one
-- KEYS[6] meta         HASH
-- KEYS[7] events       STREAM
-- KEYS[8] marker       LIST
-- KEYS[9] groups       HASH grouped job id -> its group (lib/groups.lua)
-- KEYS[10] group_ready ZSET the grouped jobs ready to run (lib/groups.lua)
-- KEYS[11] group_turns ZSET group -> pass, the groups that may run
-- KEYS[12] group_parked ZSET group -> pass, ready groups paused or at their cap
-- KEYS[13] group_state HASH each group's settings and running count
-- ARGV[1] id
-- ARGV[2] token        the lease token the worker holds
-- ARGV[3] delay_ms     how long from now
-- ARGV[4] count        "1" count the run as an attempt, "0" not
-- ARGV[5] max_events   stream cap
-- Returns the due time (server ms), or a lease_lost error.
local id = ARGV[1]
emq_take_lease(K, id, ARGV[2])
-- Its group's slot is free while it waits (lib/groups.lua).
emq_group_left(K, {id})
local now = now_ms()
local atts
if ARGV[4] == '1' then
  atts = call('HINCRBY', K.record, 'atts', 1)
else
  atts = tonumber(call('HGET', K.record, 'atts') or '0')
end
local priority = call('HGET', K.record, 'priority')
if priority then call('HSET', K.delayed_priority, id, priority) end
local due = now + tonumber(ARGV[3])
call('ZADD', K.delayed, due, id)
-- A new earliest due time, or a freed place under a global concurrency limit: wake a worker.
local paused = call('HGET', K.meta, 'paused') == '1'
if not paused and (call('ZRANGE', K.delayed, 0, 0)[1] == id or call('HEXISTS', K.meta, 'concurrency') == 1) then
  call('LPUSH', K.marker, '1')
end
call('XADD', K.events, 'MAXLEN', '~', ARGV[5], '*', 'ev', 'delayed', 'id', id, 'due', due, 'atts', atts, unpack(emq_group_tag(K, id)))
return due
