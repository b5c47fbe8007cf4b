-- complete: finish a leased job with its result, then lease the worker's next jobs in the same call.
-- uses lib/claim.lua
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] logs         emq:{q}:<id>:logs, LIST
-- KEYS[3] active       ZSET
-- KEYS[4] leases       HASH
-- KEYS[5] completed    ZSET id -> finish time
-- KEYS[6] dedup        HASH
-- KEYS[7] wait         LIST
-- KEYS[8] paused       LIST
-- KEYS[9] delayed      ZSET
-- KEYS[10] prioritized ZSET
-- KEYS[11] meta        HASH
-- KEYS[12] events      STREAM
-- KEYS[13] marker      LIST
-- ARGV[1] id
-- ARGV[2] token        the lease token the worker holds
-- ARGV[3] result       JSON text
-- ARGV[4] keep         "1" keep the record in completed, "0" delete it now
-- ARGV[5] max_events   stream cap
-- ARGV[6] count        next jobs wanted
-- ARGV[7] lease_ms     lease length of the next jobs
-- Returns {next due in ms or -1, id, token, …} like claim, or a lease_lost error.
local id = ARGV[1]
local lease = call('HGET', KEYS[4], id)
if not lease or string.match(lease, '^([^|]*)|') ~= ARGV[2] then
  fail('lease_lost', 'job ' .. id .. ' is not leased with this token any more (it stalled and was recovered, or was removed)')
end
local now = now_ms()
call('ZREM', KEYS[3], id)
call('HDEL', KEYS[4], id)
local dedup = call('HGET', KEYS[1], 'dedup')
if dedup and dedup ~= '' and call('HGET', KEYS[6], dedup) == id then call('HDEL', KEYS[6], dedup) end
if ARGV[4] == '1' then
  call('HINCRBY', KEYS[1], 'atts', 1)
  call('HSET', KEYS[1], 'result', ARGV[3], 'processed_ms', string.match(lease, '|(%d+)$'), 'finished_ms', now)
  call('ZADD', KEYS[5], now, id)
else
  call('DEL', KEYS[1], KEYS[2])
  call('HINCRBY', KEYS[11], 'gone', 1)
end
call('XADD', KEYS[12], 'MAXLEN', '~', ARGV[5], '*', 'ev', 'completed', 'id', id)
local k = {wait = KEYS[7], paused = KEYS[8], delayed = KEYS[9], prioritized = KEYS[10],
  active = KEYS[3], leases = KEYS[4], meta = KEYS[11], events = KEYS[12], marker = KEYS[13]}
return emq_claim(k, now, tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[5])
