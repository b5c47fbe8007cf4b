-- retry_job: send a failed job back to wait (prioritized, if it has a priority) with its attempts
-- reset.
-- uses lib/ready.lua
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] failed       ZSET
-- KEYS[3] wait         LIST
-- KEYS[4] paused       LIST
-- KEYS[5] meta         HASH
-- KEYS[6] events       STREAM
-- KEYS[7] marker       LIST
-- KEYS[8] prioritized  ZSET
-- ARGV[1] id
-- ARGV[2] max_events   stream cap
-- Returns 1, or 0 when the job is not failed.
local id = ARGV[1]
if call('ZREM', KEYS[2], id) == 0 then return 0 end
call('HSET', KEYS[1], 'atts', 0, 'stalls', 0)
call('HDEL', KEYS[1], 'failure', 'finished_ms', 'processed_ms', 'cancel')
local paused = call('HGET', KEYS[5], 'paused') == '1'
local k = {wait = KEYS[3], paused = KEYS[4], prioritized = KEYS[8], meta = KEYS[5]}
emq_ready(k, {id}, {call('HGET', KEYS[1], 'priority')}, false, paused)
if not paused then call('LPUSH', KEYS[7], '1') end
call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[2], '*', 'ev', 'added', 'id', id)
return 1
