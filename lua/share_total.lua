-- share_total: set (or lift) a partitioned queue's global concurrency or its rate limit's max
-- (core/src/shares.rs), in the logical queue's slot, and take a new version for the shares the
-- caller then writes: a round of lending under an older version is refused from then on
-- (share_set.lua).
-- KEYS[1] meta         HASH (the logical queue's)
-- ARGV[1] limit        'share_total' (the global concurrency) or 'share_rate' (the rate limit's max)
-- ARGV[2] total        the most over all partitions; '' lifts it
-- Returns the version.
local field = ARGV[1]
if field ~= 'share_total' and field ~= 'share_rate' then fail('internal', 'share_total: no such limit') end
if ARGV[2] == '' then
  call('HDEL', K.meta, field)
else
  call('HSET', K.meta, field, ARGV[2])
end
return call('HINCRBY', K.meta, 'share_v', 1)
