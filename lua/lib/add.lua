-- add (library), after lib/handoff.lua, lib/groups.lua and lib/ready.lua: the add transition of
-- add.lua (which documents its keys, arguments, refusals, hand-off and costs), shared with
-- batch_add.lua, which counts the jobs it adds into a batch in the same call.
-- KEYS: the caller's, by add.lua's names, in the table `k` (k.wait … k.group_names); the jobs'
-- records from KEYS[first_key]. ARGV: the jobs in groups of 7 from ARGV[first_arg], in add.lua's form.

-- Adds the jobs; `refusal` and `max_events` as add.lua's ARGV[2] and ARGV[1]; `batch` nil, or the
-- `<queue>|<batch id>` every record written gets as its `batch` field (batch_add.lua). Returns the
-- reply (add.lua's: {index, holder, …} for the jobs not added) and the ids added now, in order.
local function emq_add(k, first_key, first_arg, max_events, refusal, batch)
  local us_text, now_text, now = now_clock()
  local m = call('HMGET', k.meta, 'paused', 'grl_max', 'concurrency', 'rl_max', 'gmaxw')
  local paused = m[1] == '1'
  -- Each group's cap on ready jobs, checked for the whole call before anything is written.
  local n_jobs = (#ARGV - first_arg + 1) / 7
  local need, order = nil, nil
  for j = 0, n_jobs - 1 do
    local group = ARGV[first_arg + j * 7 + 6]
    if group ~= '' and string.match(ARGV[first_arg + j * 7 + 4], '^%d+|(%d+)|') == '0' then
      if not need then need, order = {}, {} end
      if not need[group] then order[#order + 1] = group end
      need[group] = (need[group] or 0) + 1
    end
  end
  -- With refusal "j": job index -> its refusal, for the jobs past their group's cap.
  local over = nil
  if need and (m[5] or call('HLEN', k.group_state) > 0) then
    for _, g in ipairs(order) do
      local cap = tonumber(call('HGET', k.group_state, 'm|' .. g) or m[5] or '')
      if cap then
        local lo, hi = emq_group_range(g)
        local waiting = call('ZLEXCOUNT', k.group_ready, lo, hi)
        if waiting + need[g] > cap then
          if refusal ~= 'j' then
            fail('group_full', 'group ' .. g .. ' has ' .. waiting .. ' jobs waiting and takes at most ' .. cap ..
              '; adding ' .. need[g] .. ' more would pass it (nothing was added)')
          end
          -- Refusal per job: the group's ready jobs past its room, in batch order.
          local room = cap - waiting
          over = over or {}
          for j = 0, n_jobs - 1 do
            local a = first_arg + j * 7
            if ARGV[a + 6] == g and string.match(ARGV[a + 4], '^%d+|(%d+)|') == '0' then
              if room > 0 then room = room - 1 else over[j] = '!group_full|' .. waiting .. '|' .. cap end
            end
          end
        end
      end
    end
  end
  local out = {}
  local fifo, lifo, added, handed = {}, {}, {}, {}
  -- The 'added' event's {'g:<id>', group, …} for the grouped jobs.
  local tags = {}
  local prio_seq = nil
  local woke = false
  -- nil: not looked yet; false: no hand-off in this call.
  local can_hand = nil
  for j = 0, n_jobs - 1 do
    local a = first_arg + j * 7
    local record = KEYS[first_key + j]
    local id = ARGV[a]
    local spec = ARGV[a + 4]
    local attempts, delay, priority, flags, ttl, dedup = '1', 0, 0, '', 0, ''
    if spec ~= '1|0|0||0|' then
      attempts, delay, priority, flags, ttl, dedup =
        string.match(spec, '^(%d+)|(%d+)|(%d+)|([^|]*)|(%d+)|(.*)$')
      delay, priority, ttl = tonumber(delay), tonumber(priority), tonumber(ttl)
    end
    local group = ARGV[a + 6]
    local holder = nil
    if call('EXISTS', record) == 1 then
      holder = id
    elseif over and over[j] then
      -- past its group's cap (refusal "j"): reported, nothing written
      holder = over[j]
    elseif dedup ~= '' then
      -- The dedup hash maps a key to its live holder's id, or to "<id>|<until ms>" for a TTL hold.
      holder = call('HGET', k.dedup, dedup)
      if holder then
        local held, ends = string.match(holder, '^([^|]+)|(%d+)$')
        if held then holder = tonumber(ends) > now and held or nil end
      end
      if not holder then
        if ttl > 0 then
          call('HSET', k.dedup, dedup, id .. '|' .. (now + ttl))
          call('ZADD', k.dedup_expiry, now + ttl, dedup)
        else
          call('HSET', k.dedup, dedup, id)
        end
      end
    end
    if holder then
      out[#out + 1] = tostring(j)
      out[#out + 1] = holder
    else
      local fields = {'name', ARGV[a + 1], 'data', ARGV[a + 2], 'created_ms', now_text}
      local n = 6
      if ARGV[a + 3] ~= '{}' then fields[n + 1] = 'opts'; fields[n + 2] = ARGV[a + 3]; n = n + 2 end
      if batch then fields[n + 1] = 'batch'; fields[n + 2] = batch; n = n + 2 end
    if attempts ~= '1' then fields[n + 1] = 'attempts'; fields[n + 2] = attempts; n = n + 2 end
      if priority > 0 then fields[n + 1] = 'priority'; fields[n + 2] = priority; n = n + 2 end
      if dedup ~= '' then fields[n + 1] = 'dedup'; fields[n + 2] = dedup; n = n + 2 end
      if ARGV[a + 5] ~= '' then fields[n + 1] = 'parent'; fields[n + 2] = ARGV[a + 5]; n = n + 2 end
      if group ~= '' then
        fields[n + 1] = 'group'; fields[n + 2] = group; n = n + 2
        -- A delayed job's entry names its group; a ready one's is its member (emq_group_ready below).
        if delay > 0 then call('HSET', k.groups, id, group) end
        call('ZADD', k.group_names, 'NX', 0, group)
        tags[#tags + 1] = 'g:' .. id
        tags[#tags + 1] = group
      end
      call('HSET', record, unpack(fields))
      if can_hand ~= false and delay <= 0 and priority <= 0 and group == '' and #fifo == 0
        and #lifo == 0 then
        if can_hand == nil then
          can_hand = not (paused or m[2] or m[3] or m[4]) and call('LLEN', k.wait) == 0
            and call('ZCARD', k.prioritized) == 0
          if can_hand then
            call('ZREMRANGEBYSCORE', k.waiters, '-inf', now)
            local due = call('ZRANGE', k.delayed, 0, 0, 'WITHSCORES')
            -- A delayed job already due goes first: the worker's claim promotes it.
            if due[2] and tonumber(due[2]) <= now then can_hand = false end
          end
        end
        local waiter = can_hand and call('ZPOPMAX', k.waiters) or {}
        if waiter[1] then
          -- The server's microseconds as TIME's digits (a Lua number prints only 14 of its 16).
          local token = us_text .. '.h' .. j
          call('ZADD', k.active, now + tonumber(string.match(waiter[1], '|(%d+)$')), id)
          -- Leased ahead: the worker reports the start when a slot takes it (lib/claim.lua).
          call('HSET', k.leases, id, token .. '|' .. now_text .. '|a')
          call('LPUSH', k.handoff, emq_handoff_entry(id, token, fields))
          handed[#handed + 1] = id
        else
          can_hand = false
        end
      end
      if handed[#handed] == id then
        -- handed over above
      elseif delay > 0 then
        call('ZADD', k.delayed, now + delay, id)
        -- Its priority counts from when it is due (lib/claim.lua promotes it into prioritized).
        if priority > 0 then call('HSET', k.delayed_priority, id, priority) end
        -- A new earliest due time: wake a blocked worker so its next wait ends when this job is due.
        if not paused and call('ZRANGE', k.delayed, 0, 0)[1] == id then woke = true end
      elseif group ~= '' then
        -- Ready in its group: it takes the group's turn (lib/groups.lua).
        emq_group_ready(k, id, group, priority, flags == 'l')
        woke = true
      elseif priority > 0 then
        prio_seq = prio_seq or call('HINCRBY', k.meta, 'prio_seq', 1)
        prio_seq = prio_seq + 1
        call('ZADD', k.prioritized, priority * EMQ_PRIORITY_SPAN + (prio_seq % EMQ_PRIORITY_SPAN), id)
        woke = true
      elseif flags == 'l' then
        lifo[#lifo + 1] = id
      else
        fifo[#fifo + 1] = id
      end
      added[#added + 1] = id
    end
  end
  if prio_seq then call('HSET', k.meta, 'prio_seq', prio_seq) end
  local n_added = #added
  if n_added > 0 then
    call('HINCRBY', k.meta, 'added', n_added == 1 and '1' or n_added)
    local list = paused and k.paused or k.wait
    local before = nil
    if #fifo > 0 then before = call('LPUSH', list, unpack(fifo)) - #fifo end
    if #lifo > 0 then
      local n = call('RPUSH', list, unpack(lifo))
      before = before or (n - #lifo)
    end
    if before == 0 and not paused then
      -- The list was empty, so a worker may be idle: its marker names the job it will pop next,
      -- letting it claim and read that job in one call (claim_id.lua).
      call('LPUSH', k.marker, #lifo > 0 and lifo[#lifo] or fifo[1])
    elseif woke and not paused then
      call('LPUSH', k.marker, '1')
    end
    call('XADD', k.events, 'MAXLEN', '~', max_events, '*', 'ev', 'added', 'ids',
      n_added == 1 and added[1] or table.concat(added, ' '), unpack(tags))
    if #handed > 0 then
      call('XADD', k.events, 'MAXLEN', '~', max_events, '*', 'ev', 'active', 'ids', table.concat(handed, ' '))
    end
  end
  return out, added
end
