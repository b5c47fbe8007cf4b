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
if call('SREM', KEYS[3], id) == 0 then return '' end
if call('EXISTS', KEYS[1]) == 0 then return '' end
local stalls = call('HINCRBY', KEYS[1], 'stalls', 1)
call('HINCRBY', KEYS[8], 'stalled_total', 1)
-- The stalled run counts as an attempt; whether the job runs again is up to max_stalls alone, so a
-- crash never fails a job that had one attempt.
local atts = call('HINCRBY', KEYS[1], 'atts', 1)
-- A job cancelled while it ran (its worker died before it could stop it) does not run again.
local cancel = call('HGET', KEYS[1], 'cancel')
if stalls <= tonumber(ARGV[2]) and not cancel then
  -- The re-run starts again under its group's limit.
  local group = call('HGET', KEYS[1], 'group')
  if group and call('HEXISTS', KEYS[8], 'grl_max') == 1 then call('HSET', KEYS[11], id, group) end
  local paused = call('HGET', KEYS[8], 'paused') == '1'
  local k = {wait = KEYS[4], paused = KEYS[5], prioritized = KEYS[12], meta = KEYS[8]}
  emq_ready(k, {id}, {call('HGET', KEYS[1], 'priority')}, true, paused)
  if not paused then call('LPUSH', KEYS[10], '1') end
  call('XADD', KEYS[9], 'MAXLEN', '~', ARGV[4], '*', 'ev', 'stalled', 'id', id, 'atts', atts)
  return 'wait'
end
local now = now_ms()
local dedup = call('HGET', KEYS[1], 'dedup')
if dedup and dedup ~= '' and call('HGET', KEYS[7], dedup) == id then call('HDEL', KEYS[7], dedup) end
local failure = {code = 'stalled', message = 'the job stalled ' .. stalls ..
  ' time(s): its worker stopped renewing the lease (crashed, or blocked longer than the lease)'}
if cancel then
  failure = {code = 'cancelled', message = 'the job was cancelled'}
  if cancel ~= '' then failure.message = failure.message .. ': ' .. cancel end
end
call('HSET', KEYS[1], 'failure', cjson.encode(failure), 'finished_ms', now)
if ARGV[3] == '1' then
  call('ZADD', KEYS[6], now, id)
else
  call('DEL', KEYS[1], KEYS[2])
  call('HINCRBY', KEYS[8], 'gone', 1)
end
call('XADD', KEYS[9], 'MAXLEN', '~', ARGV[4], '*', 'ev', 'failed', 'id', id, 'atts', atts,
  'code', failure.code, 'message', failure.message)
return 'failed'
