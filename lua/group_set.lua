-- group_set: change one fair-group setting (core/src/groups.rs), for one group or, for the
-- concurrency and the cap on waiting jobs, the default of every group; a group that may run after
-- the change leaves the parked set for the turns and a worker is woken for it.
-- uses lib/groups.lua
-- KEYS[1] meta         HASH (`gconc`, `gmaxw`: the defaults; `gvt`: the current virtual time)
-- KEYS[2] group_state  HASH each group's settings and running count
-- KEYS[3] group_turns  ZSET group -> pass, the groups that may run
-- KEYS[4] group_parked ZSET group -> pass, ready groups paused or at their cap
-- KEYS[5] group_names  ZSET the groups known to the queue
-- KEYS[6] marker       LIST
-- ARGV[1] setting      w weight | c concurrency | m most waiting | p paused
-- ARGV[2] group        the group, or "" for the default of every group (c and m only)
-- ARGV[3] value        the new value, or "" to lift it
-- Returns how many parked groups went back to the turns.
local what, g, value = ARGV[1], ARGV[2], ARGV[3]
local moved = 0
if g == '' then
  local field = what == 'c' and 'gconc' or 'gmaxw'
  if value == '' then call('HDEL', K.meta, field) else call('HSET', K.meta, field, value) end
  if what == 'c' then
    -- Every parked group that may run under the new default rejoins (paused ones stay parked).
    local parked = call('ZRANGE', K.group_parked, 0, -1, 'WITHSCORES')
    for i = 1, #parked, 2 do
      local running = tonumber(call('HGET', K.group_state, 'r|' .. parked[i]) or '0')
      if emq_group_unpark(K, parked[i], parked[i + 1], running) then moved = moved + 1 end
    end
  end
  return moved
end
if value == '' then
  call('HDEL', K.group_state, what .. '|' .. g)
else
  call('HSET', K.group_state, what .. '|' .. g, value)
  -- A group has a setting of its own now: claims read every turn's settings again (lib/groups.lua).
  call('HDEL', K.meta, 'gfree')
end
call('ZADD', K.group_names, 'NX', 0, g)
if what == 'p' and value ~= '' then
  -- Paused: out of the turns, its ready jobs kept.
  local pass = call('ZSCORE', K.group_turns, g)
  if pass then
    call('ZREM', K.group_turns, g)
    call('ZADD', K.group_parked, pass, g)
  end
elseif what == 'p' or what == 'c' then
  local pass = call('ZSCORE', K.group_parked, g)
  if pass then
    local running = tonumber(call('HGET', K.group_state, 'r|' .. g) or '0')
    if emq_group_unpark(K, g, pass, running) then moved = 1 end
  end
end
return moved
