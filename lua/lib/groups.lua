-- groups (library): fair groups, the one Lua definition of how a grouped job waits, takes its
-- group's turn and leaves it (see core/src/groups.rs for the design and why it is stride scheduling).
-- Every per-group structure is a member or field of the queue's fixed containers, passed in by the
-- including script: k.groups (HASH id -> group, or id -> its group-ready member while it waits),
-- k.group_ready (ZSET by member: `<group>\0<priority:7><order:16><id>`), k.group_turns (ZSET group
-- -> pass, the groups that may run), k.group_parked (ZSET group -> pass, ready but paused or at
-- their cap), k.group_state (HASH `w|g` weight, `c|g` concurrency, `m|g` most waiting, `p|g`
-- paused, `r|g` running), k.meta (`gvt` virtual time, `gup` the ungrouped jobs' pass, `gseq`,
-- `gconc` and `gmaxw`: the defaults for every group, `gfree`: no group has a setting of its own)
-- and k.marker.
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
-- A few calls per call, not per group: one read and one write of the running counts, and one look
-- at the parked groups when there are any. Returns the event fields naming the grouped ones'
-- groups ({'g:<id>', group, …}).
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
  if #order == 0 then return tags end
  local fields = {}
  for i = 1, #order do fields[i] = 'r|' .. order[i] end
  local counts = call('HMGET', k.group_state, unpack(fields))
  local set, del, running = {}, {}, {}
  for i = 1, #order do
    local r = (tonumber(counts[i]) or 0) - per[order[i]]
    if r <= 0 then
      r = 0
      del[#del + 1] = fields[i]
    else
      set[#set + 1] = fields[i]
      set[#set + 1] = r
    end
    running[i] = r
  end
  if #set > 0 then call('HSET', k.group_state, unpack(set)) end
  if #del > 0 then call('HDEL', k.group_state, unpack(del)) end
  if call('ZCARD', k.group_parked) > 0 then
    local passes = call('ZMSCORE', k.group_parked, unpack(order))
    for i = 1, #order do
      if passes[i] then emq_group_unpark(k, order[i], passes[i], running[i]) end
    end
  end
  return tags
end

-- Turns of a claim's plan (emq_group_claim), in a binary heap: the lowest pass first, then the
-- earlier place in group-turns (its own order for equal passes); the ungrouped jobs' turn comes
-- last among equal passes (a tie goes to the group).
local function emq_turn_before(a, b)
  if a.pass ~= b.pass then return a.pass < b.pass end
  return a.rank < b.rank
end

local function emq_heap_push(h, t)
  local i = #h + 1
  h[i] = t
  while i > 1 do
    local up = (i - i % 2) / 2
    if not emq_turn_before(h[i], h[up]) then break end
    h[i], h[up] = h[up], h[i]
    i = up
  end
end

local function emq_heap_pop(h)
  local top, n = h[1], #h
  h[1] = h[n]
  h[n] = nil
  n = n - 1
  local i = 1
  while true do
    local l, r, best = i * 2, i * 2 + 1, i
    if l <= n and emq_turn_before(h[l], h[best]) then best = l end
    if r <= n and emq_turn_before(h[r], h[best]) then best = r end
    if best == i then break end
    h[i], h[best] = h[best], h[i]
    i = best
  end
  return top
end

-- group-state holds a running count per group with a job held: past a few hundred fields a
-- listpack scans them all on every read and write. While it is one (and not empty), one field too
-- long for a listpack is written and removed at once: the hash changes encoding, nothing else sees
-- it (as lib/claim.lua does for active and leases).
local function emq_group_state_wide(k)
  local enc = call('OBJECT', 'ENCODING', k.group_state)
  if enc and enc ~= 'hashtable' then
    local wide = string.rep('~', 1024)
    call('HSET', k.group_state, wide, '')
    call('HDEL', k.group_state, wide)
  end
end

-- Lease up to `count` jobs into `ids` fairly: each group with ready jobs, and the ungrouped jobs
-- (wait, prioritized) as one group of weight 1, in order of pass. A group at its cap or paused is
-- parked; one whose rate window (`grl` jobs per `gwin` ms, `windows` the call's view of them) is
-- used leaves the turns until the window ends. `pop_plain(n, into)` takes up to n ungrouped jobs
-- into the list `into` and returns how many. Each grouped job taken adds {'g:<id>', group} to
-- `tags` (for the 'active' event). Returns the earliest end of a window that held a group (or nil)
-- and whether the call stopped with turns left to look at.
--
-- A claim plans its turns, then acts: one read of the lowest turns (as many as it wants jobs, and
-- one more whose pass bounds every group it did not read) and of their settings, the round-robin
-- played in Lua over a heap of those turns, then one read of each chosen group's head and one
-- write per container for all of them. A group that had fewer ready jobs than planned leaves the
-- turns, and the claim plans again for what is missing (at most EMQ_CLAIM_ROUNDS times).
local EMQ_CLAIM_ROUNDS = 8
local EMQ_CLAIM_LOOK = 500

local function emq_group_claim(k, ids, count, now, grl, gwin, windows, pop_plain, tags)
  local mv = call('HMGET', k.meta, 'gvt', 'gup', 'gconc', 'gfree')
  local gvt, gup, gconc = tonumber(mv[1]) or 0, tonumber(mv[2]) or 0, tonumber(mv[3])
  -- `gfree` in meta: no group has a weight, cap or pause of its own (group_set.lua drops it when
  -- it writes one; an empty group-state proves it again). Then a turn reads only running counts.
  local free = mv[4] == '1'
  if not free and call('HLEN', k.group_state) == 0 then
    call('HSET', k.meta, 'gfree', '1')
    free = true
  end
  local uleft = call('ZCARD', k.prioritized) + call('LLEN', k.wait)
  local held_until, more = nil, false
  emq_group_state_wide(k)
  local rounds = 0
  while #ids < count do
    rounds = rounds + 1
    if rounds > EMQ_CLAIM_ROUNDS then
      more = true
      break
    end
    local want = count - #ids
    local look = math.min(want, EMQ_CLAIM_LOOK)
    local top = call('ZRANGE', k.group_turns, 0, look, 'WITHSCORES')
    local nt = #top / 2
    if nt == 0 and uleft == 0 then break end
    -- Every group not read has a pass at or above the last one read, when there may be more.
    local bound = nil
    if nt == look + 1 then bound = tonumber(top[nt * 2]) end
    local st = {}
    if nt > 0 then
      local fields = {}
      if free then
        for i = 1, nt do fields[i] = 'r|' .. top[i * 2 - 1] end
        local running = call('HMGET', k.group_state, unpack(fields))
        for i = 1, nt do st[i * 4 - 1] = running[i] end
      else
        for i = 1, nt do
          local g = top[i * 2 - 1]
          fields[i * 4 - 3] = 'w|' .. g
          fields[i * 4 - 2] = 'c|' .. g
          fields[i * 4 - 1] = 'r|' .. g
          fields[i * 4] = 'p|' .. g
        end
        st = call('HMGET', k.group_state, unpack(fields))
      end
    end
    local heap, turns, out_turns, parked = {}, {}, {}, {}
    for i = 1, nt do
      local g, pass = top[i * 2 - 1], tonumber(top[i * 2])
      local cap = tonumber(st[i * 4 - 2]) or gconc
      local running = tonumber(st[i * 4 - 1]) or 0
      local room = want
      local w = nil
      if st[i * 4] or (cap and running >= cap) then
        room = 0
        out_turns[#out_turns + 1] = g
        parked[#parked + 1] = pass
        parked[#parked + 1] = g
      else
        if cap then room = math.min(room, cap - running) end
        if grl then
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
            room = 0
            out_turns[#out_turns + 1] = g
            if not held_until or w.ends < held_until then held_until = w.ends end
          else
            room = math.min(room, grl - w.used)
          end
        end
      end
      if room > 0 then
        local t = {g = g, pass = pass, from = pass, stride = math.floor(EMQ_GROUP_PASS / (tonumber(st[i * 4 - 3]) or 1)),
          room = room, planned = 0, rank = i, cap = cap, running = running, w = w}
        turns[#turns + 1] = t
        emq_heap_push(heap, t)
      end
    end
    local plain = nil
    if uleft > 0 then
      local upass = math.max(gup, gvt)
      plain = {plain = true, pass = upass, from = upass, stride = EMQ_GROUP_PASS, room = uleft, planned = 0,
        rank = nt + 1}
      emq_heap_push(heap, plain)
    end
    -- The round-robin, played over the turns read: one job per pick, the lowest pass first. When
    -- no turn could come round twice before the bound (many groups, each one job ahead), that is
    -- the turns in their order, the ungrouped jobs' turn placed by its pass: no heap needed.
    local picks = {}
    local once = bound ~= nil
    if once then
      for _, t in ipairs(turns) do
        if t.pass + t.stride <= bound then once = false break end
      end
      if plain and plain.pass + plain.stride < bound then once = false end
    end
    if once then
      local i, plain_due = 1, plain ~= nil and plain.pass < bound
      while #picks < want do
        local t = turns[i]
        if plain_due and (not t or plain.pass < t.pass) then
          t = plain
          plain_due = false
        elseif t then
          i = i + 1
        else
          break
        end
        picks[#picks + 1] = t
        t.planned = 1
        gvt = t.pass
      end
      heap = {}
    end
    while #picks < want and #heap > 0 do
      local t = heap[1]
      if bound and (t.pass > bound or (t.plain and t.pass >= bound)) then break end
      emq_heap_pop(heap)
      picks[#picks + 1] = t
      t.planned = t.planned + 1
      gvt = t.pass
      t.pass = t.pass + t.stride
      if t.planned < t.room then emq_heap_push(heap, t) end
    end
    -- Act: each chosen group's head, read once.
    local plain_ids = {}
    if plain and plain.planned > 0 then
      local got = pop_plain(plain.planned, plain_ids)
      if got < plain.planned then uleft = 0 else uleft = uleft - got end
      gup = plain.from + got * EMQ_GROUP_PASS
    end
    for _, t in ipairs(turns) do
      if t.planned > 0 then
        local lo, hi = emq_group_range(t.g)
        t.members = call('ZRANGEBYLEX', k.group_ready, lo, hi, 'LIMIT', 0, t.planned + 1)
        t.take = math.min(t.planned, #t.members)
        t.used = 0
      end
    end
    local taken, named, counts, turns_at = {}, {}, {}, {}
    local before = #ids
    local nplain = 0
    for _, t in ipairs(picks) do
      if t.plain then
        nplain = nplain + 1
        if plain_ids[nplain] then ids[#ids + 1] = plain_ids[nplain] end
      elseif t.used < t.take then
        t.used = t.used + 1
        local member = t.members[t.used]
        local id = string.sub(member, #t.g + 25)
        ids[#ids + 1] = id
        taken[#taken + 1] = member
        named[#named + 1] = id
        named[#named + 1] = t.g
        tags[#tags + 1] = 'g:' .. id
        tags[#tags + 1] = t.g
      end
    end
    for _, t in ipairs(turns) do
      if t.planned > 0 then
        local take = t.take
        local next_pass = t.from + take * t.stride
        if take > 0 then
          t.running = t.running + take
          counts[#counts + 1] = 'r|' .. t.g
          counts[#counts + 1] = t.running
          if t.w then
            t.w.used = t.w.used + take
            t.w.dirty = true
          end
        end
        if #t.members <= take then
          -- Its last ready job (or the last this look saw: a later add or move rejoins it).
          out_turns[#out_turns + 1] = t.g
        elseif t.cap and t.running >= t.cap then
          out_turns[#out_turns + 1] = t.g
          parked[#parked + 1] = next_pass
          parked[#parked + 1] = t.g
        elseif t.w and t.w.used >= grl then
          out_turns[#out_turns + 1] = t.g
          if not held_until or t.w.ends < held_until then held_until = t.w.ends end
        else
          turns_at[#turns_at + 1] = next_pass
          turns_at[#turns_at + 1] = t.g
        end
      end
    end
    if #taken > 0 then
      call('ZREM', k.group_ready, unpack(taken))
      call('HSET', k.groups, unpack(named))
      call('HSET', k.group_state, unpack(counts))
    end
    if #out_turns > 0 then call('ZREM', k.group_turns, unpack(out_turns)) end
    if #turns_at > 0 then call('ZADD', k.group_turns, unpack(turns_at)) end
    if #parked > 0 then call('ZADD', k.group_parked, unpack(parked)) end
    -- Nothing taken and no turn left the front: nothing more to find.
    if #ids == before and #out_turns == 0 then break end
  end
  call('HSET', k.meta, 'gvt', gvt, 'gup', gup)
  return held_until, more
end
