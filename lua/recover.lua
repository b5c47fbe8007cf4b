-- recover: put one stalled job back in wait (prioritized, if it has a priority), or in failed after
-- too many stalls.
-- uses lib/ready.lua
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
-- KEYS[11] groups      HASH job id -> group key, while the queue has a per-group rate limit
-- KEYS[12] prioritized ZSET
-- ARGV[1] id
-- ARGV[2] max_stalls   stalls allowed before the job fails
-- ARGV[3] keep         "1" keep a failed record, "0" delete it
-- ARGV[4] max_events   stream cap
-- Returns 'wait', 'failed', or '' when the job was not stalled any more.
local id = ARGV[1]
if call('SREM', K.stalled, id) == 0 then return '' end
if call('EXISTS', K.record) == 0 then return '' end
local stalls = call('HINCRBY', K.record, 'stalls', 1)
call('HINCRBY', K.meta, 'stalled_total', 1)
-- The stalled run counts as an attempt; whether the job runs again is up to max_stalls alone, so a
-- crash never fails a job that had one attempt.
local atts = call('HINCRBY', K.record, 'atts', 1)
-- A job cancelled while it ran (its worker died before it could stop it) does not run again.
local cancel = call('HGET', K.record, 'cancel')
if stalls <= tonumber(ARGV[2]) and not cancel then
  -- The re-run starts again under its group's limit.
  local group = call('HGET', K.record, 'group')
  if group and call('HEXISTS', K.meta, 'grl_max') == 1 then call('HSET', K.groups, id, group) end
  local paused = call('HGET', K.meta, 'paused') == '1'
  emq_ready(K, {id}, {call('HGET', K.record, 'priority')}, true, paused)
  if not paused then call('LPUSH', K.marker, '1') end
  call('XADD', K.events, 'MAXLEN', '~', ARGV[4], '*', 'ev', 'stalled', 'id', id, 'atts', atts)
  return 'wait'
end
local now = now_ms()
local dedup = call('HGET', K.record, 'dedup')
if dedup and dedup ~= '' and call('HGET', K.dedup, dedup) == id then call('HDEL', K.dedup, dedup) end
local failure = {code = 'stalled', message = 'the job stalled ' .. stalls ..
  ' time(s): its worker stopped renewing the lease (crashed, or blocked longer than the lease)'}
if cancel then
  failure = {code = 'cancelled', message = 'the job was cancelled'}
  if cancel ~= '' then failure.message = failure.message .. ': ' .. cancel end
end
call('HSET', K.record, 'failure', cjson.encode(failure), 'finished_ms', now)
if ARGV[3] == '1' then
  call('ZADD', K.failed, now, id)
else
  call('DEL', K.record, K.logs)
  call('HINCRBY', K.meta, 'gone', 1)
end
call('XADD', K.events, 'MAXLEN', '~', ARGV[4], '*', 'ev', 'failed', 'id', id, 'atts', atts,
  'code', failure.code, 'message', failure.message)
return 'failed'
