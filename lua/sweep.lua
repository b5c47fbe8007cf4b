-- sweep: select stalled jobs (lease expired) for recovery; one worker at a time, by the sweep lock.
-- Moves expired ids from active to stalled (containers only); recover.lua then acts on each id.
-- KEYS[1] active       ZSET id -> lease expiry
-- KEYS[2] leases       HASH
-- KEYS[3] stalled      SET
-- KEYS[4] sweep        STRING lock
-- ARGV[1] interval_ms  how long this worker holds the sweep
-- ARGV[2] limit        most ids per sweep
-- Returns the ids pending recovery (newly expired and any left by an earlier sweeper), or {} when
-- another worker holds the sweep.
if not call('SET', KEYS[4], '1', 'NX', 'PX', ARGV[1]) then return {} end
local limit = tonumber(ARGV[2])
local expired = call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms(), 'LIMIT', 0, limit)
for _, id in ipairs(expired) do
  call('ZREM', KEYS[1], id)
  call('HDEL', KEYS[2], id)
  call('SADD', KEYS[3], id)
end
return call('SRANDMEMBER', KEYS[3], limit)
