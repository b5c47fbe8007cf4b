-- sweep: select stalled jobs (lease expired) for recovery; one worker at a time, by the sweep lock.
-- uses lib/handoff.lua
-- uses lib/groups.lua
-- Moves expired ids from active to stalled (containers only); recover.lua then acts on each id.
-- A job an add handed over whose entry is still on `handoff` never reached a worker: in the same
-- call its entry is dropped and it goes back to wait (or paused) without counting a stall.
-- A job leased ahead whose run was never reported started (lease "<token>|<ms>|a", lib/claim.lua)
-- goes to stalled with the mark STRANDED left in leases in place of its lease (no token matches
-- it), so that recover.lua gives it back without charging a stall or an attempt.
-- KEYS[1] active       ZSET id -> lease expiry
-- KEYS[2] leases       HASH
-- KEYS[3] stalled      SET
-- KEYS[4] sweep        STRING lock
-- KEYS[5] handoff      LIST entries an add handed to blocked workers, not taken yet
-- KEYS[6] wait         LIST
-- KEYS[7] paused       LIST
-- KEYS[8] meta         HASH
-- KEYS[9] events       STREAM
-- KEYS[10] marker      LIST
-- KEYS[11] groups      HASH grouped job id -> its group (lib/groups.lua)
-- KEYS[12] group_turns ZSET group -> pass, the groups that may run
-- KEYS[13] group_parked ZSET group -> pass, ready groups paused or at their cap
-- KEYS[14] group_state HASH each group's settings and running count
-- ARGV[1] interval_ms  how long this worker holds the sweep
-- ARGV[2] limit        most ids per sweep
-- ARGV[3] max_events   stream cap
-- Returns the ids pending recovery (newly expired and any left by an earlier sweeper), or {} when
-- another worker holds the sweep.
if not call('SET', K.sweep, '1', 'NX', 'PX', ARGV[1]) then return {} end
local limit = tonumber(ARGV[2])
local expired = call('ZRANGEBYSCORE', K.active, '-inf', now_ms(), 'LIMIT', 0, limit)
local untaken = {}
if #expired > 0 and call('LLEN', K.handoff) > 0 then
  for _, entry in ipairs(call('LRANGE', K.handoff, 0, -1)) do
    untaken[emq_handoff_id(entry)] = entry
  end
end
local paused = nil
local back = 0
for _, id in ipairs(expired) do
  call('ZREM', K.active, id)
  local lease = call('HGET', K.leases, id)
  if lease and string.sub(lease, -2) == '|a' and not untaken[id] then
    call('HSET', K.leases, id, '-|a')
  else
    call('HDEL', K.leases, id)
  end
  if untaken[id] then
    call('LREM', K.handoff, 1, untaken[id])
    if paused == nil then paused = call('HGET', K.meta, 'paused') == '1' end
    call('RPUSH', paused and K.paused or K.wait, id)
    call('XADD', K.events, 'MAXLEN', '~', ARGV[3], '*', 'ev', 'released', 'id', id)
    back = back + 1
  else
    call('SADD', K.stalled, id)
  end
end
-- Stalled jobs are out of active: their groups' slots are free (recover.lua readies them).
if #expired > 0 then emq_group_left(K, expired) end
if back > 0 and not paused then call('LPUSH', K.marker, '1') end
return call('SRANDMEMBER', K.stalled, limit)
