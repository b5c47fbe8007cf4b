-- node_acquire: lease a node id (0..1023) for minting job ids, on the server's clock.
-- KEYS[1] nodes     {emq}:nodes, HASH node id -> "<token>|<expiry ms>" ("-|<floor ms>" once released)
-- ARGV[1] ttl_ms    lease length
-- ARGV[2] token     the new holder's random token
-- Picks a free or expired node id with the lowest floor (the last instant its previous holder may
-- have minted at), so a new holder never mints an id an earlier one did.
-- Returns {node, server now ms, lease expiry ms, floor ms}.
local ttl = tonumber(ARGV[1])
local token = ARGV[2]
local now = now_ms()
local flat = call('HGETALL', K.nodes)
local held = {}
for i = 1, #flat, 2 do
  local token, ms = string.match(flat[i + 1], '^([^|]*)|(%d+)$')
  held[tonumber(flat[i])] = {token = token, ms = tonumber(ms)}
end
local best, best_floor = nil, nil
for node = 0, 1023 do
  local h = held[node]
  local floor = nil
  if h == nil then
    floor = 0
  elseif h.token == '-' or h.ms <= now then
    floor = h.ms
  end
  if floor ~= nil and (best_floor == nil or floor < best_floor) then
    best, best_floor = node, floor
    if floor == 0 then break end
  end
end
if best == nil then
  fail('node_lease_lost', 'all 1024 node ids are leased; too many live emq processes on this datastore')
end
local expiry = now + ttl
call('HSET', K.nodes, best, token .. '|' .. expiry)
return {best, now, expiry, best_floor}
