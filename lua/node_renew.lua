-- node_renew: extend this holder's node-id lease, on the server's clock.
-- KEYS[1] nodes     {emq}:nodes, HASH (see node_acquire)
-- ARGV[1] node      the leased node id
-- ARGV[2] token     the holder's token
-- ARGV[3] ttl_ms    new lease length from now
-- Returns {server now ms, new expiry ms}, or a node_lease_lost error when another holder has it.
local node, mine = ARGV[1], ARGV[2]
local value = call('HGET', K.nodes, node)
local token = value and string.match(value, '^([^|]*)|')
if token ~= mine then
  fail('node_lease_lost', 'node id ' .. node .. ' is no longer leased to this process')
end
local now = now_ms()
local expiry = now + tonumber(ARGV[3])
call('HSET', K.nodes, node, mine .. '|' .. expiry)
return {now, expiry}
