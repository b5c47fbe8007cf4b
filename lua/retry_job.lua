-- retry_job: send a failed job back to wait (prioritized, if it has a priority) with its attempts
-- reset.
-- uses lib/groups.lua
-- uses lib/ready.lua
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] failed       ZSET
-- KEYS[3] wait         LIST
-- KEYS[4] paused       LIST
-- KEYS[5] meta         HASH
-- KEYS[6] events       STREAM
-- KEYS[7] marker       LIST
-- KEYS[8] prioritized  ZSET
-- KEYS[9] groups       HASH grouped job id -> its group (lib/groups.lua)
-- KEYS[10] group_ready ZSET the grouped jobs ready to run
-- KEYS[11] group_turns ZSET group -> pass, the groups that may run
-- KEYS[12] group_parked ZSET group -> pass, ready groups paused or at their cap
-- ARGV[1] id
-- ARGV[2] max_events   stream cap
-- Returns 1, or 0 when the job is not failed.
local id = ARGV[1]
if call('ZREM', K.failed, id) == 0 then return 0 end
call('HSET', K.record, 'atts', 0, 'stalls', 0)
call('HDEL', K.record, 'failure', 'finished_ms', 'processed_ms', 'cancel')
local paused = call('HGET', K.meta, 'paused') == '1'
emq_ready(K, {id}, {call('HGET', K.record, 'priority')}, false, paused)
if not paused then call('LPUSH', K.marker, '1') end
call('XADD', K.events, 'MAXLEN', '~', ARGV[2], '*', 'ev', 'added', 'id', id, unpack(emq_group_tag(K, id)))
return 1
