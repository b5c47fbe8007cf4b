-- children_wait: a run that added children ends (core/src/flow.rs): the job leaves active and
-- waits in waiting-children until its last child is done (child_done.lua then makes it ready, and
-- it runs again with its children's results), or, when every child is already done, is ready to
-- run again at once. A child that failed with the `fail` policy while the job ran (its record's
-- `fail_child`) fails the job instead: the caller records that failure (fail.lua) and nothing
-- changes here. The run's attempt is not counted.
-- uses lib/groups.lua
-- uses lib/ready.lua
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] active       ZSET
-- KEYS[3] leases       HASH
-- KEYS[4] waiting_children ZSET
-- KEYS[5] wait         LIST
-- KEYS[6] paused       LIST
-- KEYS[7] prioritized  ZSET
-- KEYS[8] meta         HASH
-- KEYS[9] events       STREAM
-- KEYS[10] marker      LIST
-- KEYS[11] groups      HASH grouped job id -> its group (lib/groups.lua)
-- KEYS[12] group_ready ZSET the grouped jobs ready to run (lib/groups.lua)
-- KEYS[13] group_turns ZSET group -> pass, the groups that may run
-- KEYS[14] group_parked ZSET group -> pass, ready groups paused or at their cap
-- KEYS[15] group_state HASH each group's settings and running count
-- ARGV[1] id           the job's id
-- ARGV[2] token        its lease token
-- ARGV[3] result       the run's result (JSON), kept in the record as `result`
-- ARGV[4] max_events   stream cap
-- Returns 'waiting', 'again' (every child done: ready to run again), 'fail:<child>' or 'lost'.
local id, token = ARGV[1], ARGV[2]
local lease = call('HGET', K.leases, id)
if not lease or string.sub(lease, 1, #token + 1) ~= token .. '|' then return 'lost' end
local failed = call('HGET', K.record, 'fail_child')
if failed then return 'fail:' .. failed end
call('ZREM', K.active, id)
call('HDEL', K.leases, id)
call('HSET', K.record, 'result', ARGV[3])
emq_group_left(K, {id})
if (tonumber(call('HGET', K.record, 'pending')) or 0) > 0 then
  call('ZADD', K.waiting_children, now_ms(), id)
  call('XADD', K.events, 'MAXLEN', '~', ARGV[4], '*', 'ev', 'waiting-children', 'id', id, unpack(emq_group_tag(K, id)))
  return 'waiting'
end
local paused = call('HGET', K.meta, 'paused') == '1'
emq_ready(K, {id}, {call('HGET', K.record, 'priority')}, false, paused)
if not paused then call('LPUSH', K.marker, '1') end
call('XADD', K.events, 'MAXLEN', '~', ARGV[4], '*', 'ev', 'added', 'id', id, unpack(emq_group_tag(K, id)))
return 'again'
