-- promote_job: run a delayed job now.
-- KEYS[1] delayed      ZSET
-- KEYS[2] wait         LIST
-- KEYS[3] paused       LIST
-- KEYS[4] meta         HASH
-- KEYS[5] events       STREAM
-- KEYS[6] marker       LIST
-- ARGV[1] id
-- ARGV[2] max_events   stream cap
-- Returns 1, or 0 when the job is not delayed.
local id = ARGV[1]
if call('ZREM', KEYS[1], id) == 0 then return 0 end
local paused = call('HGET', KEYS[4], 'paused') == '1'
call('LPUSH', paused and KEYS[3] or KEYS[2], id)
if not paused then call('LPUSH', KEYS[6], '1') end
call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[2], '*', 'ev', 'added', 'id', id)
return 1
