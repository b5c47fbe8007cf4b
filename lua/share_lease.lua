-- share_lease: start a round of lending a partitioned queue's global concurrency and rate limit
-- (core/src/shares.rs), in the logical queue's slot: the caller becomes (or stays) the one that
-- moves the partitions' shares, for `lease_ms` on the server's clock, and gets the round's version,
-- which every share it writes carries (a partition refuses a lower one: share_set.lua).
-- KEYS[1] meta         HASH (the logical queue's: `share_total`, `share_rate`, `share_v`,
--                      `share_holder`, `share_until`, `share_parts`)
-- ARGV[1] holder       the caller's id
-- ARGV[2] lease_ms     how long the round may last, in ms
-- ARGV[3] parts        how many partitions the caller knows of
-- `share_parts`, written by a growth before it publishes the grown layout (queue/grow.rs), is the
-- count every round must know: a caller that knows fewer partitions (it has not read the growth
-- yet) would lend what the new partitions hold, so it gets no round.
-- Returns {version, global concurrency or -1, rate limit's max or -1}: version 0 when the queue
-- has neither limit, another caller holds the lease, or the caller's partitions are not the
-- queue's.
local m = call('HMGET', K.meta, 'share_total', 'share_rate', 'share_holder', 'share_until',
  'share_parts')
if not m[1] and not m[2] then return {0, -1, -1} end
if m[5] and m[5] ~= ARGV[3] then return {0, -1, -1} end
local now = now_ms()
if m[3] and m[3] ~= ARGV[1] and tonumber(m[4] or '0') > now then return {0, -1, -1} end
call('HSET', K.meta, 'share_holder', ARGV[1], 'share_until', now + tonumber(ARGV[2]))
return {call('HINCRBY', K.meta, 'share_v', 1), tonumber(m[1] or '-1'), tonumber(m[2] or '-1')}
