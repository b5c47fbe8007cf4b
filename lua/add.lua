-- add: add a batch of jobs (one or many); idempotent per job (a retried add of an id that exists
-- changes nothing for it).
-- uses lib/handoff.lua
-- uses lib/groups.lua
-- uses lib/ready.lua
-- KEYS[1] wait         LIST
-- KEYS[2] paused       LIST
-- KEYS[3] delayed      ZSET
-- KEYS[4] prioritized  ZSET
-- KEYS[5] meta         HASH
-- KEYS[6] events       STREAM
-- KEYS[7] dedup        HASH dedup key (user data) -> id of the live job holding it
-- KEYS[8] marker       LIST ("1", or the id an idle worker should claim)
-- KEYS[9] groups       HASH grouped job id -> its group (user data), or its group-ready member
-- KEYS[10] dedup_expiry ZSET dedup key -> when its TTL hold ends (keys held for a TTL only)
-- KEYS[11] waiters     ZSET "<worker>|<lease_ms>" -> end of its blocking wait (wait_register.lua)
-- KEYS[12] handoff     LIST entries handed to blocked workers
-- KEYS[13] active      ZSET id -> lease expiry
-- KEYS[14] leases      HASH id -> "<token>|<start ms>"
-- KEYS[15] delayed_priority HASH id -> priority, for delayed jobs that have one
-- KEYS[16] group_ready ZSET the grouped jobs ready to run (lib/groups.lua)
-- KEYS[17] group_turns ZSET group -> pass, the groups that may run
-- KEYS[18] group_parked ZSET group -> pass, ready groups paused or at their cap
-- KEYS[19] group_state HASH each group's settings (`m|<g>` most waiting) and running count
-- KEYS[20] group_names ZSET the groups known to the queue (Queue::groups)
-- KEYS[21..] record    emq:{q}:<id>, HASH, one per job, in the order of the job groups below
-- ARGV[1] max_events   stream cap
-- ARGV[2] refusal      "" an add past a group's cap refuses the whole call (add_bulk); "j" only the
--                      jobs past it, each reported as {index, "!group_full|<waiting>|<cap>"}, the
--                      others added (the coalesced adds of separate callers, queue/coalesce.rs)
-- ARGV[3..] job        groups of 7: id, name, data (JSON), opts (JSON, non-default options only),
--                      spec "<attempts>|<delay_ms>|<priority>|<flags>|<dedup TTL ms>|<dedup>"
--                      (priority 0 none, lower first; flags "l" lifo; TTL 0: the dedup key is
--                      held while the job lives; dedup "" none; a plain job's spec is "1|0|0||0|"),
--                      parent ("" or "<queue>:<id>" in a flow), group ("" none)
-- Hand-off: a plain job (no delay, priority or group) added while the queue is empty, unpaused and
-- unlimited, with a worker registered in waiters, is leased here (lease from the server's clock, as
-- the registration asked) and its entry pushed on `handoff`, which that worker's BRPOP pops: the job
-- starts with no claim round trip (the entry: lib/handoff.lua). One registration is consumed per job handed over.
-- A grouped job that is ready at once waits in its group (lib/groups.lua); when that would put more
-- ready jobs in a group than its cap (`m|<g>`, or meta `gmaxw` for every group), the whole call is
-- refused with a group_full error before anything is written; with refusal "j", only the group's
-- jobs past its room (in batch order, as one add after another would be).
-- Returns {index, holder, …} for the jobs not added (index 0-based in the batch; holder the id of
-- the existing job, or of the live job holding its dedup key, or with refusal "j" the group_full
-- refusal above); empty when every job was added.
-- Costs counted per call (bench/RESULTS.md, "where the time goes"): every KEYS/ARGV entry and every
-- number <-> text conversion costs the server more than most of the commands below, so a plain job
-- (spec "1|0|0||0|") is read with string compares only, the created stamp is the server's TIME as
-- text, and the clock is read once, in the forms of now_clock() (lib/guard.lua).
local us_text, now_text, now = now_clock()
local m = call('HMGET', K.meta, 'paused', 'grl_max', 'concurrency', 'rl_max', 'gmaxw')
local paused = m[1] == '1'
-- Each group's cap on ready jobs, checked for the whole call before anything is written.
local n_jobs = (#ARGV - 2) / 7
local need, order = nil, nil
for j = 0, n_jobs - 1 do
  local group = ARGV[3 + j * 7 + 6]
  if group ~= '' and string.match(ARGV[3 + j * 7 + 4], '^%d+|(%d+)|') == '0' then
    if not need then need, order = {}, {} end
    if not need[group] then order[#order + 1] = group end
    need[group] = (need[group] or 0) + 1
  end
end
-- With refusal "j": job index -> its refusal, for the jobs past their group's cap.
local over = nil
if need and (m[5] or call('HLEN', K.group_state) > 0) then
  for _, g in ipairs(order) do
    local cap = tonumber(call('HGET', K.group_state, 'm|' .. g) or m[5] or '')
    if cap then
      local lo, hi = emq_group_range(g)
      local waiting = call('ZLEXCOUNT', K.group_ready, lo, hi)
      if waiting + need[g] > cap then
        if ARGV[2] ~= 'j' then
          fail('group_full', 'group ' .. g .. ' has ' .. waiting .. ' jobs waiting and takes at most ' .. cap ..
            '; adding ' .. need[g] .. ' more would pass it (nothing was added)')
        end
        -- Refusal per job: the group's ready jobs past its room, in batch order.
        local room = cap - waiting
        over = over or {}
        for j = 0, n_jobs - 1 do
          local a = 3 + j * 7
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
  local a = 3 + j * 7
  local record = KEYS[21 + j]
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
    holder = call('HGET', K.dedup, dedup)
    if holder then
      local held, ends = string.match(holder, '^([^|]+)|(%d+)$')
      if held then holder = tonumber(ends) > now and held or nil end
    end
    if not holder then
      if ttl > 0 then
        call('HSET', K.dedup, dedup, id .. '|' .. (now + ttl))
        call('ZADD', K.dedup_expiry, now + ttl, dedup)
      else
        call('HSET', K.dedup, dedup, id)
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
    if attempts ~= '1' then fields[n + 1] = 'attempts'; fields[n + 2] = attempts; n = n + 2 end
    if priority > 0 then fields[n + 1] = 'priority'; fields[n + 2] = priority; n = n + 2 end
    if dedup ~= '' then fields[n + 1] = 'dedup'; fields[n + 2] = dedup; n = n + 2 end
    if ARGV[a + 5] ~= '' then fields[n + 1] = 'parent'; fields[n + 2] = ARGV[a + 5]; n = n + 2 end
    if group ~= '' then
      fields[n + 1] = 'group'; fields[n + 2] = group; n = n + 2
      -- A delayed job's entry names its group; a ready one's is its member (emq_group_ready below).
      if delay > 0 then call('HSET', K.groups, id, group) end
      call('ZADD', K.group_names, 'NX', 0, group)
      tags[#tags + 1] = 'g:' .. id
      tags[#tags + 1] = group
    end
    call('HSET', record, unpack(fields))
    if can_hand ~= false and delay <= 0 and priority <= 0 and group == '' and #fifo == 0
      and #lifo == 0 then
      if can_hand == nil then
        can_hand = not (paused or m[2] or m[3] or m[4]) and call('LLEN', K.wait) == 0
          and call('ZCARD', K.prioritized) == 0
        if can_hand then
          call('ZREMRANGEBYSCORE', K.waiters, '-inf', now)
          local due = call('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')
          -- A delayed job already due goes first: the worker's claim promotes it.
          if due[2] and tonumber(due[2]) <= now then can_hand = false end
        end
      end
      local waiter = can_hand and call('ZPOPMAX', K.waiters) or {}
      if waiter[1] then
        -- The server's microseconds as TIME's digits (a Lua number prints only 14 of its 16).
        local token = us_text .. '.h' .. j
        call('ZADD', K.active, now + tonumber(string.match(waiter[1], '|(%d+)$')), id)
        -- Leased ahead: the worker reports the start when a slot takes it (lib/claim.lua).
        call('HSET', K.leases, id, token .. '|' .. now_text .. '|a')
        call('LPUSH', K.handoff, emq_handoff_entry(id, token, fields))
        handed[#handed + 1] = id
      else
        can_hand = false
      end
    end
    if handed[#handed] == id then
      -- handed over above
    elseif delay > 0 then
      call('ZADD', K.delayed, now + delay, id)
      -- Its priority counts from when it is due (lib/claim.lua promotes it into prioritized).
      if priority > 0 then call('HSET', K.delayed_priority, id, priority) end
      -- A new earliest due time: wake a blocked worker so its next wait ends when this job is due.
      if not paused and call('ZRANGE', K.delayed, 0, 0)[1] == id then woke = true end
    elseif group ~= '' then
      -- Ready in its group: it takes the group's turn (lib/groups.lua).
      emq_group_ready(K, id, group, priority, flags == 'l')
      woke = true
    elseif priority > 0 then
      prio_seq = prio_seq or call('HINCRBY', K.meta, 'prio_seq', 1)
      prio_seq = prio_seq + 1
      call('ZADD', K.prioritized, priority * EMQ_PRIORITY_SPAN + (prio_seq % EMQ_PRIORITY_SPAN), id)
      woke = true
    elseif flags == 'l' then
      lifo[#lifo + 1] = id
    else
      fifo[#fifo + 1] = id
    end
    added[#added + 1] = id
  end
end
if prio_seq then call('HSET', K.meta, 'prio_seq', prio_seq) end
local n_added = #added
if n_added > 0 then
  call('HINCRBY', K.meta, 'added', n_added == 1 and '1' or n_added)
  local list = paused and K.paused or K.wait
  local before = nil
  if #fifo > 0 then before = call('LPUSH', list, unpack(fifo)) - #fifo end
  if #lifo > 0 then
    local n = call('RPUSH', list, unpack(lifo))
    before = before or (n - #lifo)
  end
  if before == 0 and not paused then
    -- The list was empty, so a worker may be idle: its marker names the job it will pop next,
    -- letting it claim and read that job in one call (claim_id.lua).
    call('LPUSH', K.marker, #lifo > 0 and lifo[#lifo] or fifo[1])
  elseif woke and not paused then
    call('LPUSH', K.marker, '1')
  end
  call('XADD', K.events, 'MAXLEN', '~', ARGV[1], '*', 'ev', 'added', 'ids',
    n_added == 1 and added[1] or table.concat(added, ' '), unpack(tags))
  if #handed > 0 then
    call('XADD', K.events, 'MAXLEN', '~', ARGV[1], '*', 'ev', 'active', 'ids', table.concat(handed, ' '))
  end
end
return out
