-- promote_job: run a delayed job now.
-- uses lib/ready.lua
-- KEYS[1] delayed      ZSET
-- KEYS[2] wait         LIST
-- KEYS[3] paused       LIST
-- KEYS[4] meta         HASH
-- KEYS[5] events       STREAM
-- KEYS[6] marker       LIST
-- KEYS[7] prioritized  ZSET
-- KEYS[8] delayed_priority HASH id -> priority, for delayed jobs that have one
-- ARGV[1] id
-- ARGV[2] max_events   stream cap
-- Returns 1, or 0 when the job is not delayed.
local id = ARGV[1]
if call('ZREM', KEYS[1], id) == 0 then return 0 end
local paused = call('HGET', KEYS[4], 'paused') == '1'
local priority = call('HGET', KEYS[8], id)
if priority then call('HDEL', KEYS[8], id) end
local k = {wait = KEYS[2], paused = KEYS[3], prioritized = KEYS[7], meta = KEYS[4]}
emq_ready(k, {id}, {priority}, false, paused)
if not paused then call('LPUSH', KEYS[6], '1') end
call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[2], '*', 'ev', 'added', 'id', id)
return 1
