-- renew: extend the leases of a worker's in-flight jobs, on the server's clock.
-- KEYS[1] active       ZSET id -> lease expiry
-- KEYS[2] leases       HASH id -> "<token>|<start ms>"
-- ARGV[1] lease_ms     new lease length from now
-- ARGV[2..] job        id, token pairs
-- Returns the ids whose lease was lost (token changed, or no longer active).
local expiry = now_ms() + tonumber(ARGV[1])
local lost = {}
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  local lease = call('HGET', K.leases, id)
  if lease and string.match(lease, '^([^|]*)|') == ARGV[i + 1] and call('ZSCORE', K.active, id) then
    call('ZADD', K.active, 'XX', expiry, id)
  else
    lost[#lost + 1] = id
  end
end
return lost
