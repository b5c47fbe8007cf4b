-- started: a worker reports that the runs of jobs it had leased ahead (lease "<token>|<ms>|a",
-- see lib/claim.lua) have started: each such lease becomes "<token>|<now>", so from now on a
-- stall of the job is charged (a stall and an attempt) instead of being given back uncounted.
-- KEYS[1] active       ZSET id -> lease expiry
-- KEYS[2] leases       HASH id -> "<token>|<start ms>" or "<token>|<start ms>|a"
-- ARGV[1..] job        id, token pairs
-- Returns the ids whose lease is not this worker's any more (token changed, or not active).
local now = now_ms()
local lost = {}
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  local lease = call('HGET', K.leases, id)
  if lease and string.match(lease, '^([^|]*)|') == ARGV[i + 1] and call('ZSCORE', K.active, id) then
    if string.sub(lease, -2) == '|a' then call('HSET', K.leases, id, ARGV[i + 1] .. '|' .. now) end
  else
    lost[#lost + 1] = id
  end
end
return lost
