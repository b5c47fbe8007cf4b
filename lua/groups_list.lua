-- groups_list: one page of the queue's groups, by name, each with its backlog, running count and
-- settings (core/src/groups.rs). A group with nothing waiting or running and no setting of its own
-- is forgotten here and left out of the page.
-- uses lib/groups.lua
-- KEYS[1] group_names  ZSET the groups known to the queue (every score 0: ordered by name)
-- KEYS[2] group_state  HASH each group's settings and running count
-- KEYS[3] group_ready  ZSET the grouped jobs ready to run
-- KEYS[4] meta         HASH (`gconc`, `gmaxw`: the defaults for every group)
-- ARGV[1] offset       groups to skip
-- ARGV[2] limit        most groups to return
-- Returns {total known, default concurrency or false, default most waiting or false,
--          then per group: name, waiting, running, weight or false, concurrency or false,
--          most waiting or false, paused (0/1)}.
local offset, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local defaults = call('HMGET', K.meta, 'gconc', 'gmaxw')
local out = {call('ZCARD', K.group_names), defaults[1] or false, defaults[2] or false}
if limit <= 0 then return out end
local names = call('ZRANGE', K.group_names, offset, offset + limit - 1)
local gone = {}
for _, g in ipairs(names) do
  local st = call('HMGET', K.group_state, 'w|' .. g, 'c|' .. g, 'm|' .. g, 'p|' .. g, 'r|' .. g)
  local lo, hi = emq_group_range(g)
  local waiting = call('ZLEXCOUNT', K.group_ready, lo, hi)
  local running = tonumber(st[5] or '0')
  if waiting == 0 and running == 0 and not (st[1] or st[2] or st[3] or st[4]) then
    gone[#gone + 1] = g
  else
    out[#out + 1] = g
    out[#out + 1] = waiting
    out[#out + 1] = running
    out[#out + 1] = st[1] or false
    out[#out + 1] = st[2] or false
    out[#out + 1] = st[3] or false
    out[#out + 1] = st[4] and 1 or 0
  end
end
if #gone > 0 then
  call('ZREM', K.group_names, unpack(gone))
  out[1] = out[1] - #gone
end
return out
