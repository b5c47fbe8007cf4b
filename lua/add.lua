-- add: add one job; idempotent (a retried add of the same id changes nothing).
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] wait         LIST
-- KEYS[3] paused       LIST
-- KEYS[4] delayed      ZSET
-- KEYS[5] prioritized  ZSET
-- KEYS[6] meta         HASH
-- KEYS[7] events       STREAM
-- KEYS[8] dedup        HASH dedup key (user data) -> id of the live job holding it
-- KEYS[9] marker       LIST
-- ARGV[1] id
-- ARGV[2] name
-- ARGV[3] data         JSON text
-- ARGV[4] opts         JSON text, kept for readers
-- ARGV[5] attempts     most attempts
-- ARGV[6] delay_ms     run no sooner than this after now
-- ARGV[7] priority     0 for none; lower runs first
-- ARGV[8] lifo         "1" to run before older jobs
-- ARGV[9] dedup        "" for none
-- ARGV[10] max_events  stream cap
-- Returns {id, 1} when added, {id of the existing job, 0} when it exists or a live job holds dedup.
local id, dedup = ARGV[1], ARGV[9]
if call('EXISTS', KEYS[1]) == 1 then return {id, 0} end
if dedup ~= '' then
  local holder = call('HGET', KEYS[8], dedup)
  if holder then return {holder, 0} end
  call('HSET', KEYS[8], dedup, id)
end
local now = now_ms()
local delay, priority = tonumber(ARGV[6]), tonumber(ARGV[7])
call('HSET', KEYS[1], 'name', ARGV[2], 'data', ARGV[3], 'opts', ARGV[4], 'attempts', ARGV[5],
  'atts', 0, 'created_ms', now, 'priority', priority, 'dedup', dedup)
call('HINCRBY', KEYS[6], 'added', 1)
local paused = call('HGET', KEYS[6], 'paused') == '1'
if delay > 0 then
  call('ZADD', KEYS[4], now + delay, id)
elseif priority > 0 then
  local seq = call('HINCRBY', KEYS[6], 'prio_seq', 1)
  call('ZADD', KEYS[5], priority * 4294967296 + (seq % 4294967296), id)
  if not paused then call('LPUSH', KEYS[9], '1') end
elseif paused then
  call(ARGV[8] == '1' and 'RPUSH' or 'LPUSH', KEYS[3], id)
else
  local n = call(ARGV[8] == '1' and 'RPUSH' or 'LPUSH', KEYS[2], id)
  if n == 1 then call('LPUSH', KEYS[9], '1') end
end
call('XADD', KEYS[7], 'MAXLEN', '~', ARGV[10], '*', 'ev', delay > 0 and 'delayed' or 'added', 'id', id)
return {id, 1}
