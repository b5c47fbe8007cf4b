-- release: give a worker's unfinished jobs back to the front of wait, or of their priority in
-- prioritized (graceful shutdown); the attempt is not counted.
-- uses lib/ready.lua
-- KEYS[1] active       ZSET
-- KEYS[2] leases       HASH
-- KEYS[3] wait         LIST
-- KEYS[4] paused       LIST
-- KEYS[5] meta         HASH
-- KEYS[6] events       STREAM
-- KEYS[7] marker       LIST
-- KEYS[8] groups       HASH job id -> group key, while the queue has a per-group rate limit
-- KEYS[9] prioritized  ZSET
-- KEYS[10..] record    emq:{q}:<id>, HASH, one per job, in the order of the pairs below
-- ARGV[1] max_events   stream cap
-- ARGV[2..] job        id, token pairs
-- A released job of a group waits under its group's limit again (its run had not counted); its
-- priority and group are read from its record, so a change made while it ran holds.
-- Returns the number of jobs released.
local paused = call('HGET', K.meta, 'paused') == '1'
local grouped = call('HEXISTS', K.meta, 'grl_max') == 1
local n = 0
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  local record = KEYS[10 + (i - 2) / 2]
  local lease = call('HGET', K.leases, id)
  if lease and string.match(lease, '^([^|]*)|') == ARGV[i + 1] then
    call('ZREM', K.active, id)
    call('HDEL', K.leases, id)
    local own = call('HMGET', record, 'group', 'priority')
    if grouped and own[1] then call('HSET', K.groups, id, own[1]) end
    emq_ready(K, {id}, {own[2]}, true, paused)
    call('XADD', K.events, 'MAXLEN', '~', ARGV[1], '*', 'ev', 'released', 'id', id)
    n = n + 1
  end
end
if n > 0 and not paused then call('LPUSH', K.marker, '1') end
return n
