-- share_lease: start a round of lending a partitioned queue's global concurrency
-- (core/src/shares.rs), in the logical queue's slot: the caller becomes (or stays) the one that
-- moves the partitions' shares, for `lease_ms` on the server's clock, and gets the round's version,
-- which every share it writes carries (a partition refuses a lower one: share_set.lua).
-- KEYS[1] meta         HASH (the logical queue's: `share_total`, `share_v`, `share_holder`,
--                      `share_until`)
-- ARGV[1] holder       the caller's id
-- ARGV[2] lease_ms     how long the round may last, in ms
-- Returns {version, total}: version 0 when the queue has no global concurrency or another caller
-- holds the lease.
local m = call('HMGET', K.meta, 'share_total', 'share_holder', 'share_until')
if not m[1] then return {0, 0} end
local now = now_ms()
if m[2] and m[2] ~= ARGV[1] and tonumber(m[3] or '0') > now then return {0, 0} end
call('HSET', K.meta, 'share_holder', ARGV[1], 'share_until', now + tonumber(ARGV[2]))
return {call('HINCRBY', K.meta, 'share_v', 1), tonumber(m[1])}
