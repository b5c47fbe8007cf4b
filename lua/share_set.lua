-- share_set: read, and set, one partition's shares of its queue's global concurrency and rate
-- limit (core/src/shares.rs), in the partition's slot, fenced by the round's version: a version
-- lower than one this partition has seen is refused (a round whose lease lapsed, or one that began
-- before a limit was set again), so two rounds never both move shares. The shares are the
-- partition's own `concurrency` and `rl_max` (with `rl_window_ms`), which its claims honour
-- (lib/claim.lua); raising one wakes a worker.
-- KEYS[1] meta         HASH
-- KEYS[2] active       ZSET
-- KEYS[3] wait         LIST
-- KEYS[4] prioritized  ZSET
-- KEYS[5] group_ready  ZSET
-- KEYS[6] limiter      STRING (the rate limit's starts in the current window)
-- KEYS[7] marker       LIST
-- ARGV[1] version      the round's (share_lease.lua) or the limit's (share_total.lua)
-- ARGV[2] concurrency  the new concurrency share ('' keeps it; '-' lifts it)
-- ARGV[3] rate         the new rate share ('' keeps it; '-' lifts it and its window)
-- ARGV[4] window_ms    the rate limit's window to store with a rate share ('' keeps it)
-- Returns {-1} for a stale version, else {jobs in active, ready jobs (wait, prioritized, grouped
-- ready), the concurrency share before (-1 for none), starts in the rate window, the rate share
-- before (-1 for none)}.
local v = tonumber(ARGV[1])
local m = call('HMGET', K.meta, 'share_v', 'concurrency', 'rl_max')
local seen = tonumber(m[1] or '0')
if seen > v then return {-1} end
if seen < v then call('HSET', K.meta, 'share_v', ARGV[1]) end
local conc_before, rate_before = tonumber(m[2] or '-1'), tonumber(m[3] or '-1')
local wake = false
local function set(field, share, before)
  if share == '-' then
    call('HDEL', K.meta, field)
    wake = wake or before >= 0
  elseif share ~= '' then
    call('HSET', K.meta, field, share)
    wake = wake or (before >= 0 and tonumber(share) > before)
  end
end
set('concurrency', ARGV[2], conc_before)
set('rl_max', ARGV[3], rate_before)
if ARGV[3] == '-' then call('HDEL', K.meta, 'rl_window_ms') end
if ARGV[4] ~= '' then call('HSET', K.meta, 'rl_window_ms', ARGV[4]) end
if wake then call('LPUSH', K.marker, '1') end
local ready = call('LLEN', K.wait) + call('ZCARD', K.prioritized) + call('ZCARD', K.group_ready)
local used = tonumber(call('GET', K.limiter) or '0')
return {call('ZCARD', K.active), ready, conc_before, used, rate_before}
