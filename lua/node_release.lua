-- node_release: give a node id back, keeping its expiry as the floor for the next holder.
-- KEYS[1] nodes     {emq}:nodes, HASH (see node_acquire)
-- ARGV[1] node      the leased node id
-- ARGV[2] token     the holder's token
-- Returns 1 if released, 0 if it was not ours any more.
local value = call('HGET', K.nodes, ARGV[1])
if not value then return 0 end
local token, expiry = string.match(value, '^([^|]*)|(%d+)$')
if token ~= ARGV[2] then return 0 end
call('HSET', K.nodes, ARGV[1], '-|' .. expiry)
return 1
