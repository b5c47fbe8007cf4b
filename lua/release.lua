-- release: give a worker's unfinished jobs back to the front of wait, or of their priority in
-- prioritized (graceful shutdown); the attempt is not counted.
-- uses lib/groups.lua
-- uses lib/ready.lua
-- KEYS[1] active       ZSET
-- KEYS[2] leases       HASH
-- KEYS[3] wait         LIST
-- KEYS[4] paused       LIST
-- KEYS[5] meta         HASH
-- KEYS[6] events       STREAM
-- KEYS[7] marker       LIST
-- KEYS[8] groups       HASH grouped job id -> its group (lib/groups.lua)
-- KEYS[9] prioritized  ZSET
-- KEYS[10] group_ready ZSET the grouped jobs ready to run (lib/groups.lua)
-- KEYS[11] group_turns ZSET group -> pass, the groups that may run
-- KEYS[12] group_parked ZSET group -> pass, ready groups paused or at their cap
-- KEYS[13] group_state HASH each group's settings and running count
-- KEYS[14..] record    emq:{q}:<id>, HASH, one per job, in the order of the pairs below
-- ARGV[1] max_events   stream cap
-- ARGV[2..] job        id, token pairs
-- A released job of a group frees its group's slot and waits in its group again (its run had not
-- counted); its priority is read from its record, so a change made while it ran holds.
-- Returns the number of jobs released.
local paused = call('HGET', K.meta, 'paused') == '1'
local n = 0
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  local record = KEYS[14 + (i - 2) / 2]
  local lease = call('HGET', K.leases, id)
  if lease and string.match(lease, '^([^|]*)|') == ARGV[i + 1] then
    call('ZREM', K.active, id)
    call('HDEL', K.leases, id)
    emq_group_left(K, {id})
    emq_ready(K, {id}, {call('HGET', record, 'priority')}, true, paused)
    call('XADD', K.events, 'MAXLEN', '~', ARGV[1], '*', 'ev', 'released', 'id', id, unpack(emq_group_tag(K, id)))
    n = n + 1
  end
end
if n > 0 and not paused then call('LPUSH', K.marker, '1') end
return n
