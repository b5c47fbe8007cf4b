-- share_set: read, and with `share` set, one partition's share of its queue's global concurrency
-- (core/src/shares.rs), in the partition's slot, fenced by the round's version: a version lower
-- than one this partition has seen is refused (a round whose lease lapsed, or one that began
-- before the total was set again), so two rounds never both move shares. A share is the
-- partition's own `concurrency`, which its claims honour (lib/claim.lua); raising it wakes a
-- worker.
-- KEYS[1] meta         HASH
-- KEYS[2] active       ZSET
-- KEYS[3] wait         LIST
-- KEYS[4] prioritized  ZSET
-- KEYS[5] group_ready  ZSET
-- KEYS[6] marker       LIST
-- ARGV[1] version      the round's (share_lease.lua) or the total's (share_total.lua)
-- ARGV[2] share        the new share ('' reads only; '-' lifts it)
-- Returns {-1} for a stale version, else {jobs in active, ready jobs (wait, prioritized, grouped
-- ready), the share before (-1 for none)}.
local v = tonumber(ARGV[1])
local m = call('HMGET', K.meta, 'share_v', 'concurrency')
local seen = tonumber(m[1] or '0')
if seen > v then return {-1} end
if seen < v then call('HSET', K.meta, 'share_v', ARGV[1]) end
local before = tonumber(m[2] or '-1')
local share = ARGV[2]
if share == '-' then
  call('HDEL', K.meta, 'concurrency')
  if before >= 0 then call('LPUSH', K.marker, '1') end
elseif share ~= '' then
  call('HSET', K.meta, 'concurrency', share)
  if tonumber(share) > before and before >= 0 then call('LPUSH', K.marker, '1') end
end
local ready = call('LLEN', K.wait) + call('ZCARD', K.prioritized) + call('ZCARD', K.group_ready)
return {call('ZCARD', K.active), ready, before}
