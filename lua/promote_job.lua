-- promote_job: run a delayed job now.
-- uses lib/groups.lua
-- uses lib/ready.lua
-- KEYS[1] delayed      ZSET
-- KEYS[2] wait         LIST
-- KEYS[3] paused       LIST
-- KEYS[4] meta         HASH
-- KEYS[5] events       STREAM
-- KEYS[6] marker       LIST
-- KEYS[7] prioritized  ZSET
-- KEYS[8] delayed_priority HASH id -> priority, for delayed jobs that have one
-- KEYS[9] groups       HASH grouped job id -> its group (lib/groups.lua)
-- KEYS[10] group_ready ZSET the grouped jobs ready to run
-- KEYS[11] group_turns ZSET group -> pass, the groups that may run
-- KEYS[12] group_parked ZSET group -> pass, ready groups paused or at their cap
-- ARGV[1] id
-- ARGV[2] max_events   stream cap
-- Returns 1, or 0 when the job is not delayed.
local id = ARGV[1]
if call('ZREM', K.delayed, id) == 0 then return 0 end
local paused = call('HGET', K.meta, 'paused') == '1'
local priority = call('HGET', K.delayed_priority, id)
if priority then call('HDEL', K.delayed_priority, id) end
emq_ready(K, {id}, {priority}, false, paused)
if not paused then call('LPUSH', K.marker, '1') end
call('XADD', K.events, 'MAXLEN', '~', ARGV[2], '*', 'ev', 'added', 'id', id, unpack(emq_group_tag(K, id)))
return 1
