-- claim_id: lease the one job a wake-up marker named and return its record in the same call, so an
-- idle worker starts a new job after one round trip. Falls back (returns {0}) whenever the general
-- claim must decide instead: the queue is paused or limited (global concurrency, rate limit or
-- per-group rate limit), or the job is no longer waiting.
-- KEYS[1] record       emq:{q}:<id> of the named job, HASH
-- KEYS[2] wait         LIST
-- KEYS[3] active       ZSET id -> lease expiry
-- KEYS[4] leases       HASH id -> "<token>|<start ms>"
-- KEYS[5] meta         HASH
-- KEYS[6] events       STREAM
-- KEYS[7] marker       LIST
-- KEYS[8] prioritized  ZSET (a waiting prioritized job goes first: fall back)
-- KEYS[9] group_turns  ZSET groups that may run (any: the fair claim decides, fall back)
-- ARGV[1] id           the job the marker named
-- ARGV[2] lease_ms     lease length
-- ARGV[3] max_events   stream cap
-- ARGV[4] start        "1": its run starts at once; "0": it waits in the worker's buffer (leased
--                      ahead, lib/claim.lua)
-- ARGV[5..] field      record fields to return, in order
-- Returns {1, token, value of each field…}, or {0}.
local id = ARGV[1]
local m = call('HMGET', K.meta, 'paused', 'concurrency', 'rl_max', 'grl_max')
if m[1] == '1' or m[2] or m[3] or m[4] or call('ZCARD', K.prioritized) > 0
  or call('ZCARD', K.group_turns) > 0 then return {0} end
if call('LREM', K.wait, -1, id) == 0 then return {0} end
local us_text, now_text, now = now_clock()
local token = us_text .. '.1'
call('ZADD', K.active, string.format('%d', now + tonumber(ARGV[2])), id)
call('HSET', K.leases, id, token .. '|' .. now_text .. (ARGV[4] == '1' and '' or '|a'))
call('XADD', K.events, 'MAXLEN', '~', ARGV[3], '*', 'ev', 'active', 'ids', id)
if call('LLEN', K.wait) > 0 then call('LPUSH', K.marker, '1') end
local fields = {}
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
local out = {1, token}
local values = call('HMGET', K.record, unpack(fields))
for i = 1, #fields do out[#out + 1] = values[i] or false end
return out
