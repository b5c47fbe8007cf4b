-- recover: put one stalled job back in wait (prioritized, if it has a priority), or in failed after
-- too many stalls. A job whose run never started (leased ahead by a worker that died before it
-- reported the start: sweep.lua left the mark STRANDED in leases) goes back uncounted instead.
-- uses lib/groups.lua
-- uses lib/ready.lua
-- uses lib/batch_note.lua
-- uses lib/finish.lua
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] logs         emq:{q}:<id>:logs, LIST
-- KEYS[3] stalled      SET
-- KEYS[4] wait         LIST
-- KEYS[5] paused       LIST
-- KEYS[6] failed       ZSET
-- KEYS[7] dedup        HASH
-- KEYS[8] meta         HASH
-- KEYS[9] events       STREAM
-- KEYS[10] marker      LIST
-- KEYS[11] groups      HASH grouped job id -> its group (lib/groups.lua)
-- KEYS[12] prioritized ZSET
-- KEYS[13] leases      HASH (holds STRANDED for a stalled job whose run never started)
-- KEYS[14] metrics     HASH finished counts per minute
-- KEYS[15] group_ready ZSET the grouped jobs ready to run (lib/groups.lua)
-- KEYS[16] group_turns ZSET group -> pass, the groups that may run
-- KEYS[17] group_parked ZSET group -> pass, ready groups paused or at their cap
-- KEYS[18] group_state HASH each group's settings and running count
-- KEYS[19] dead_letters ZSET failed jobs on their way to their dead-letter queue (lib/finish.lua)
-- KEYS[20] batch_pending ZSET batched outcomes on their way to their batch (lib/batch_note.lua)
-- ARGV[1] id
-- ARGV[2] max_stalls   stalls allowed before the job fails
-- ARGV[3] keep         "1" keep a failed record, "0" delete it
-- ARGV[4] max_events   stream cap
-- Returns 'wait', 'unstarted' (back to wait, uncounted), 'failed', 'dead_letter' (failed, with a
-- dead-letter queue to move to: core/src/dead_letter.rs), or '' when the job was not stalled any
-- more.
local STRANDED = '-|a'
local id = ARGV[1]
if call('SREM', K.stalled, id) == 0 then return '' end
local stranded = call('HGET', K.leases, id) == STRANDED
if stranded then call('HDEL', K.leases, id) end
if call('EXISTS', K.record) == 0 then return '' end
local stalls, atts
if stranded then
  -- Never reached a handler: no stall, no attempt. The record counts these returns (`strands`):
  -- a worker reports the start of such a job before running it, so a job that kills its worker is
  -- returned uncounted at most once and charged from then on.
  call('HINCRBY', K.record, 'strands', 1)
  local r = call('HMGET', K.record, 'stalls', 'atts')
  stalls, atts = tonumber(r[1] or '0'), tonumber(r[2] or '0')
else
  stalls = call('HINCRBY', K.record, 'stalls', 1)
  call('HINCRBY', K.meta, 'stalled_total', 1)
  -- The stalled run counts as an attempt; whether the job runs again is up to max_stalls alone, so a
  -- crash never fails a job that had one attempt.
  atts = call('HINCRBY', K.record, 'atts', 1)
end
-- A job cancelled while it ran (its worker died before it could stop it) does not run again.
local cancel = call('HGET', K.record, 'cancel')
if (stranded or stalls <= tonumber(ARGV[2])) and not cancel then
  local paused = call('HGET', K.meta, 'paused') == '1'
  emq_ready(K, {id}, {call('HGET', K.record, 'priority')}, true, paused)
  if not paused then call('LPUSH', K.marker, '1') end
  if stranded then
    call('XADD', K.events, 'MAXLEN', '~', ARGV[4], '*', 'ev', 'released', 'id', id, unpack(emq_group_tag(K, id)))
    return 'unstarted'
  end
  call('XADD', K.events, 'MAXLEN', '~', ARGV[4], '*', 'ev', 'stalled', 'id', id, 'atts', atts, unpack(emq_group_tag(K, id)))
  return 'wait'
end
local now = now_ms()
local failure = {code = 'stalled', message = 'the job stalled ' .. stalls ..
  ' time(s): its worker stopped renewing the lease (crashed, or blocked longer than the lease)'}
if cancel then
  failure = {code = 'cancelled', message = 'the job was cancelled'}
  if cancel ~= '' then failure.message = failure.message .. ': ' .. cancel end
end
call('HSET', K.record, 'failure', cjson.encode(failure))
local tag = emq_group_tag(K, id)
emq_group_forget(K, id)
if emq_fail_for_good(K, id, now, ARGV[3] == '1', atts, failure.code, failure.message, ARGV[4], tag) then
  return 'dead_letter'
end
return 'failed'
