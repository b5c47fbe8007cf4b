-- share_total: set (or lift) a partitioned queue's global concurrency (core/src/shares.rs), in the
-- logical queue's slot, and take a new version for the shares the caller then writes: a round of
-- lending under an older version is refused from then on (share_set.lua).
-- KEYS[1] meta         HASH (the logical queue's)
-- ARGV[1] total        the most jobs active at once over all partitions; '' lifts it
-- Returns the version.
if ARGV[1] == '' then
  call('HDEL', K.meta, 'share_total')
else
  call('HSET', K.meta, 'share_total', ARGV[1])
end
return call('HINCRBY', K.meta, 'share_v', 1)
