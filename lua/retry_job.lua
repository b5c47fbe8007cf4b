-- retry_job: send a failed job back to wait with its attempts reset.
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] failed       ZSET
-- KEYS[3] wait         LIST
-- KEYS[4] paused       LIST
-- KEYS[5] meta         HASH
-- KEYS[6] events       STREAM
-- KEYS[7] marker       LIST
-- ARGV[1] id
-- ARGV[2] max_events   stream cap
-- Returns 1, or 0 when the job is not failed.
local id = ARGV[1]
if call('ZREM', KEYS[2], id) == 0 then return 0 end
call('HSET', KEYS[1], 'atts', 0, 'stalls', 0)
call('HDEL', KEYS[1], 'failure', 'finished_ms', 'processed_ms')
local paused = call('HGET', KEYS[5], 'paused') == '1'
call('LPUSH', paused and KEYS[4] or KEYS[3], id)
if not paused then call('LPUSH', KEYS[7], '1') end
call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[2], '*', 'ev', 'added', 'id', id)
return 1
