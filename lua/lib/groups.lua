-- groups (library): fair groups, the one Lua definition of how a grouped job waits, takes its
-- group's turn and leaves it (see core/src/groups.rs for the design and why it is stride scheduling).
-- Every per-group structure is a member or field of the queue's fixed containers, passed in by the
-- including script: k.groups (HASH id -> group, or id -> its group-ready member while it waits),
-- k.group_ready (ZSET by member: `<group>\0<priority:7><order:16><id>`), k.group_turns (ZSET group
-- -> pass, the groups that may run), k.group_parked (ZSET group -> pass, ready but paused or at
-- their cap), k.group_state (HASH `w|g` weight, `c|g` concurrency, `m|g` most waiting, `p|g`
-- paused, `r|g` running), k.meta (`gvt` virtual time, `gup` the ungrouped jobs' pass, `gseq`,
-- `gconc` and `gmaxw`: the defaults for every group) and k.marker.
-- Used by lib/ready.lua, lib/claim.lua, add.lua, complete.lua and every script where a job leaves
-- active or waiting.
-- KEYS: none of its own. ARGV: none of its own.

-- The pass a group of weight 1 advances per job it runs (weight w: this / w).
local EMQ_GROUP_PASS = 1000000

-- The group a groups-hash value names, and the job's group-ready member when it is one.
local function emq_group_of(v)
  local z = string.find(v, '\0', 1, true)
  if z then return string.sub(v, 1, z - 1), v end
  return v, nil
end

-- The event fields naming job `id`'s group ({'group', g}), or none for an ungrouped job.
local function emq_group_tag(k, id)
  local v = call('HGET', k.groups, id)
  if not v then return {} end
  return {'group', (emq_group_of(v))}
end

-- Whether group `g`, with `running` jobs active, may run now (not paused, below its cap).
local function emq_group_may_run(k, g, running)
  local st = call('HMGET', k.group_state, 'p|' .. g, 'c|' .. g)
  if st[1] then return false end
  local cap = tonumber(st[2]) or tonumber(call('HGET', k.meta, 'gconc') or '')
  return not cap or running < cap
end

-- Group `g` takes its turn again at its pass or the current virtual time, whichever is later (an
-- idle group earns no credit), unless it is already in the turns or parked.
local function emq_group_join(k, g)
  if call('ZSCORE', k.group_turns, g) or call('ZSCORE', k.group_parked, g) then return end
  call('ZADD', k.group_turns, call('HGET', k.meta, 'gvt') or '0', g)
end

-- A parked group `g` (left at `pass`) with `running` jobs active goes back to the turns if it may
-- run, and a worker is woken for it.
local function emq_group_unpark(k, g, pass, running)
  if not emq_group_may_run(k, g, running) then return false end
  call('ZREM', k.group_parked, g)
  local gvt = tonumber(call('HGET', k.meta, 'gvt') or '0')
  call('ZADD', k.group_turns, math.max(tonumber(pass), gvt), g)
  call('LPUSH', k.marker, '1')
  return true
end

-- Job `id` of group `g` becomes ready: behind its group's ready jobs of priority `p` (0: none),
-- or ahead of them with `front` (LIFO, an interrupted or failed run). Its member is kept in
-- k.groups so a later move finds it.
local function emq_group_ready(k, id, g, p, front)
  local seq = call('HINCRBY', k.meta, 'gseq', 1)
  local prio = (p and p > 0) and string.format('%07d', p) or '9999999'
  local order = front and string.format('0%015d', 999999999999999 - seq) or string.format('1%015d', seq)
  local member = g .. '\0' .. prio .. order .. id
  call('ZADD', k.group_ready, 0, member)
  call('HSET', k.groups, id, member)
  emq_group_join(k, g)
end

-- The ready jobs of group `g`: the bounds of its range in k.group_ready.
local function emq_group_range(g)
  return '[' .. g .. '\0', '(' .. g .. '\1'
end

-- Job `id` is no longer waiting in its group (a claim, a delay, a removal): its member leaves
-- group-ready and its entry in k.groups names the bare group again. Returns the group, or nil.
local function emq_group_unready(k, id)
  local v = call('HGET', k.groups, id)
  if not v then return nil end
  local g, member = emq_group_of(v)
  if member then
    call('ZREM', k.group_ready, member)
    call('HSET', k.groups, id, g)
  end
  return g
end

-- Job `id` is gone (finished or removed): its member and entry go. Returns its group, or nil.
local function emq_group_forget(k, id)
  local v = call('HGET', k.groups, id)
  if not v then return nil end
  local g, member = emq_group_of(v)
  if member then call('ZREM', k.group_ready, member) end
  call('HDEL', k.groups, id)
  return g
end

-- Jobs `ids` (from index `from` to `to`) left active: their groups' running counts go down, and
-- a parked group that may run again rejoins the turns. Call it before their entries are forgotten.
-- Returns the event fields naming the grouped ones' groups ({'g:<id>', group, …}).
local function emq_group_left(k, ids, from, to)
  from, to = from or 1, to or #ids
  if to < from or call('HLEN', k.groups) == 0 then return {} end
  local gs = call('HMGET', k.groups, unpack(ids, from, to))
  local per, order, tags = {}, {}, {}
  for i = 1, #gs do
    local v = gs[i]
    if v then
      local g = emq_group_of(v)
      tags[#tags + 1] = 'g:' .. ids[from + i - 1]
      tags[#tags + 1] = g
      if not per[g] then order[#order + 1] = g end
      per[g] = (per[g] or 0) + 1
    end
  end
  for _, g in ipairs(order) do
    local running = call('HINCRBY', k.group_state, 'r|' .. g, -per[g])
    if running <= 0 then
      call('HDEL', k.group_state, 'r|' .. g)
      running = 0
    end
    local pass = call('ZSCORE', k.group_parked, g)
    if pass then emq_group_unpark(k, g, pass, running) end
  end
  return tags
end

-- Lease up to `count` jobs into `ids` fairly: each group with ready jobs, and the ungrouped jobs
-- (wait, prioritized) as one group of weight 1, in order of pass. A group at its cap or paused is
-- parked; one whose rate window (`grl` jobs per `gwin` ms, `windows` the call's view of them) is
-- used leaves the turns until the window ends. `pop_plain(n)` takes up to n ungrouped jobs into
-- `ids` and returns how many. Each grouped job taken adds {'g:<id>', group} to `tags` (for the
-- 'active' event). Returns the earliest end of a window that held a group (or nil) and
-- whether the call stopped with turns left to look at.
local function emq_group_claim(k, ids, count, now, grl, gwin, windows, pop_plain, tags)
  local mv = call('HMGET', k.meta, 'gvt', 'gup', 'gconc')
  local gvt, gup, gconc = tonumber(mv[1]) or 0, tonumber(mv[2]) or 0, tonumber(mv[3])
  local uleft = call('ZCARD', k.prioritized) + call('LLEN', k.wait)
  local held_until = nil
  local looks = 0
  while #ids < count and looks < count + 100 do
    looks = looks + 1
    local top = call('ZRANGE', k.group_turns, 0, 1, 'WITHSCORES')
    local g, pass = top[1], tonumber(top[2])
    local upass = math.max(gup, gvt)
    -- The ungrouped jobs run while their pass is below the lowest group's (a tie goes to the group).
    if uleft > 0 and (not g or upass < pass) then
      local n = math.min(count - #ids, uleft)
      if g then n = math.min(n, math.ceil((pass - upass) / EMQ_GROUP_PASS)) end
      local got = pop_plain(n)
      if got == 0 then
        uleft = 0
      else
        uleft = uleft - got
        gvt = upass + (got - 1) * EMQ_GROUP_PASS
        gup = upass + got * EMQ_GROUP_PASS
      end
    elseif g then
      local st = call('HMGET', k.group_state, 'w|' .. g, 'c|' .. g, 'r|' .. g, 'p|' .. g)
      local cap = tonumber(st[2]) or gconc
      local running = tonumber(st[3]) or 0
      local n = count - #ids
      local w = nil
      if st[4] or (cap and running >= cap) then
        n = 0
        call('ZREM', k.group_turns, g)
        call('ZADD', k.group_parked, pass, g)
      elseif grl then
        w = windows[g]
        if not w then
          local ends = tonumber(call('ZSCORE', k.group_windows, g) or '0')
          if ends > now then
            w = {ends = ends, used = tonumber(call('HGET', k.group_counts, g) or '0'), new = false}
          else
            w = {ends = now + gwin, used = 0, new = true}
          end
          windows[g] = w
        end
        if w.used >= grl then
          -- Its window is used: out of the turns until the window ends (lib/claim.lua rejoins it).
          n = 0
          call('ZREM', k.group_turns, g)
          if not held_until or w.ends < held_until then held_until = w.ends end
        else
          n = math.min(n, grl - w.used)
        end
      end
      if n > 0 then
        if cap then n = math.min(n, cap - running) end
        local stride = math.floor(EMQ_GROUP_PASS / (tonumber(st[1]) or 1))
        -- Jobs in a row while this group's pass stays at or below the next one's.
        local bound = tonumber(top[4])
        if uleft > 0 and (not bound or upass < bound) then bound = upass end
        if bound then n = math.min(n, math.floor((bound - pass) / stride) + 1) end
        local lo, hi = emq_group_range(g)
        local members = call('ZRANGEBYLEX', k.group_ready, lo, hi, 'LIMIT', 0, n + 1)
        local take = math.min(n, #members)
        if take == 0 then
          call('ZREM', k.group_turns, g)
        else
          local taken, named = {}, {}
          local skip = #g + 24
          for i = 1, take do
            local id = string.sub(members[i], skip + 1)
            ids[#ids + 1] = id
            taken[i] = members[i]
            named[i * 2 - 1] = id
            named[i * 2] = g
            tags[#tags + 1] = 'g:' .. id
            tags[#tags + 1] = g
          end
          call('ZREM', k.group_ready, unpack(taken))
          call('HSET', k.groups, unpack(named))
          running = running + take
          call('HSET', k.group_state, 'r|' .. g, running)
          gvt = pass + (take - 1) * stride
          local next_pass = pass + take * stride
          if w then
            w.used = w.used + take
            w.dirty = true
          end
          if #members <= take then
            -- Its last ready job (or the last this look saw: a later add or move rejoins it).
            call('ZREM', k.group_turns, g)
          elseif cap and running >= cap then
            call('ZREM', k.group_turns, g)
            call('ZADD', k.group_parked, next_pass, g)
          elseif w and w.used >= grl then
            call('ZREM', k.group_turns, g)
            if not held_until or w.ends < held_until then held_until = w.ends end
          else
            call('ZADD', k.group_turns, next_pass, g)
          end
        end
      end
    else
      break
    end
  end
  call('HSET', k.meta, 'gvt', gvt, 'gup', gup)
  return held_until, #ids < count and looks >= count + 100
end
