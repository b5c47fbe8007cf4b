-- claim (library): lease up to `count` ready jobs; used by claim.lua and complete.lua.
-- Touches only the queue's containers, passed in by the including script; never a job's own key.
-- Needs lib/handoff.lua, lib/groups.lua and lib/ready.lua before it.
-- KEYS: none of its own. ARGV: none of its own.
--
-- Honours the queue's settings in meta: `paused`, `concurrency` (most jobs active across all
-- workers), `rl_max` per `rl_window_ms` (a fixed-window rate limit counted in the limiter key) and
-- `grl_max` per `grl_window_ms` (the same per group: a group's window ends at its score in
-- k.group_windows, its starts so far are in k.group_counts; a group that has used its window leaves
-- the turns until the window ends, when a claim rejoins it). While any group is in k.group_turns,
-- jobs are taken fairly (lib/groups.lua: groups and the ungrouped jobs by pass, each group's weight,
-- concurrency cap and pause honoured); otherwise from prioritized and wait alone.
-- Promotes due delayed jobs into wait (or paused; prioritized for those with an entry in
-- k.delayed_priority), then, unless the queue is paused, takes jobs
-- handed over but not taken (k.handoff, when given), pops from prioritized (lowest score first)
-- and from the right of wait, scores each id in active with its
-- lease expiry, and stores "<token>|<start ms>" in leases (the token is the server's microsecond
-- clock and the job's place in the batch, so no two leases of a job share one) for the first `start`
-- jobs, whose runs start at once (the worker has that many free slots), and "<token>|<start ms>|a"
-- for the others, leased ahead: their runs have not started, so if the worker dies before it reports
-- a start (started.lua, or complete.lua's reports) the sweep gives them back uncounted. With `wake`, pushes
-- a marker to wake another worker when the batch came back full, and clears the markers when it did
-- not. `freed` jobs just left active: with a concurrency limit, another worker is woken for them.
-- The clock comes in the forms of `now_clock()` (lib/guard.lua): `us_text`, the server's
-- microseconds as text, `now_text` and `now`, its milliseconds as text and as a number.
-- Returns {next due in ms or -1, id, token, …}.
-- A count as text, for a job's place in its token and for a command's count: without printf (a
-- number Lua turns into text, or hands to a command, is printed with sprintf, ~2,500
-- instructions; string.format('%d') costs ~1,500 and string.char is a C call), by digits
-- (EMQ_DIGITS[d + 1] is the digit d).
local EMQ_DIGITS = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9'}
local function emq_count_text(i)
  if i < 10 then return EMQ_DIGITS[i + 1] end
  if i < 100 then return EMQ_DIGITS[(i - i % 10) / 10 + 1] .. EMQ_DIGITS[i % 10 + 1] end
  if i < 1000 then
    return EMQ_DIGITS[(i - i % 100) / 100 + 1] .. EMQ_DIGITS[(i % 100 - i % 10) / 10 + 1] .. EMQ_DIGITS[i % 10 + 1]
  end
  return string.format('%d', i)
end

local function emq_claim(k, us_text, now_text, now, count, lease_ms, max_events, wake, freed, start)
  local m = call('HMGET', k.meta, 'paused', 'concurrency', 'rl_max', 'rl_window_ms', 'grl_max', 'grl_window_ms')
  local paused = m[1] == '1'
  local maxc, rl, grl, gwin = tonumber(m[2]), tonumber(m[3]), tonumber(m[5]), tonumber(m[6])
  local out = {-1}
  local head = call('ZRANGE', k.delayed, '0', '0', 'WITHSCORES')
  if head[2] and tonumber(head[2]) <= now then
    local due = call('ZRANGEBYSCORE', k.delayed, '-inf', now, 'LIMIT', 0, 1000)
    call('ZREM', k.delayed, unpack(due))
    local priorities = {}
    if call('HLEN', k.delayed_priority) > 0 then
      priorities = call('HMGET', k.delayed_priority, unpack(due))
      call('HDEL', k.delayed_priority, unpack(due))
    end
    emq_ready(k, due, priorities, false, paused)
    head = call('ZRANGE', k.delayed, '0', '0', 'WITHSCORES')
    if wake and not paused then call('LPUSH', k.marker, '1') end
  end
  if head[2] then out[1] = math.max(0, tonumber(head[2]) - now) end
  if maxc and freed > 0 and not paused then call('LPUSH', k.marker, '1') end
  if paused or count <= 0 then return out end
  if maxc then count = math.min(count, maxc - call('ZCARD', k.active)) end
  if rl then
    local used = tonumber(call('GET', k.limiter) or '0')
    if used >= rl then
      local ttl = call('PTTL', k.limiter)
      if ttl > 0 and (out[1] < 0 or ttl < out[1]) then out[1] = ttl end
      return out
    end
    count = math.min(count, rl - used)
  end
  if count <= 0 then return out end
  local ids = {}
  -- Jobs an add handed to a registered worker that has not taken them (it got busy, or is gone)
  -- are the oldest ready jobs: they go first. Popping the entry makes the job this caller's (the
  -- worker's BRPOP pops the same list), and the lease below replaces the one the add wrote.
  if k.handoff and call('LLEN', k.handoff) > 0 then
    for _, entry in ipairs(call('RPOP', k.handoff, count) or {}) do
      local id = emq_handoff_id(entry)
      -- Still active under the add's lease (the sweep returns an expired one to wait itself).
      if call('ZSCORE', k.active, id) then ids[#ids + 1] = id end
    end
  end
  -- Ungrouped jobs for the fair path: up to `n`, prioritized first, then wait, appended to the list
  -- `into`. Returns how many it took.
  local function pop_plain(n, into)
    local got = 0
    local popped = call('ZPOPMIN', k.prioritized, emq_count_text(n))
    for i = 1, #popped, 2 do
      got = got + 1
      into[#into + 1] = popped[i]
    end
    if got < n then
      for _, id in ipairs(call('RPOP', k.wait, emq_count_text(n - got)) or {}) do
        got = got + 1
        into[#into + 1] = id
      end
    end
    return got
  end
  local held_until, more = nil, false
  local tags = {}
  local windows = {}
  if grl then
    -- Ended windows are forgotten, and their groups take their turns again.
    local ended = call('ZRANGEBYSCORE', k.group_windows, '-inf', now, 'LIMIT', 0, 100)
    if #ended > 0 then
      call('ZREM', k.group_windows, unpack(ended))
      call('HDEL', k.group_counts, unpack(ended))
      for _, g in ipairs(ended) do emq_group_join(k, g) end
    end
  end
  if #ids < count then
    if call('ZCARD', k.group_turns) > 0 then
      -- Grouped jobs are ready: every group, and the ungrouped jobs as one, take turns.
      held_until, more = emq_group_claim(k, ids, count, now, grl, gwin, windows, pop_plain, tags)
    else
      -- No group is ready: one look at the jobs wanted, prioritized first, then wait (RPOP's
      -- reply is the list of ids itself when nothing came before it).
      local nids = #ids
      local popped = call('ZPOPMIN', k.prioritized, emq_count_text(count - nids))
      for i = 1, #popped, 2 do
        nids = nids + 1
        ids[nids] = popped[i]
      end
      if nids < count then
        local more_ids = call('RPOP', k.wait, emq_count_text(count - nids))
        if more_ids then
          if nids == 0 then
            ids = more_ids
          else
            for i = 1, #more_ids do
              nids = nids + 1
              ids[nids] = more_ids[i]
            end
          end
        end
      end
    end
  end
  for g, w in pairs(windows) do
    if w.dirty then
      if w.new then call('ZADD', k.group_windows, w.ends, g) end
      call('HSET', k.group_counts, g, w.used)
    end
  end
  if held_until and (out[1] < 0 or held_until - now < out[1]) then out[1] = held_until - now end
  if #ids == 0 then
    if wake then
      if more then call('LPUSH', k.marker, '1') else call('DEL', k.marker) end
    end
    return out
  end
  if rl then
    if call('INCRBY', k.limiter, #ids) == #ids then call('PEXPIRE', k.limiter, tonumber(m[4])) end
  end
  -- Numbers formatted once per call, not per job (each number Lua turns into text, or hands to a
  -- command, costs the server a printf).
  local expiry = string.format('%d', now + lease_ms)
  local from_now, ahead = '|' .. now_text, '|' .. now_text .. '|a'
  local scored, leased = {}, {}
  local n = #ids
  for i = 1, n do
    local id = ids[i]
    local token
    if i < 10 then
      token = us_text .. '.' .. EMQ_DIGITS[i + 1]
    elseif i < 100 then
      token = us_text .. '.' .. EMQ_DIGITS[(i - i % 10) / 10 + 1] .. EMQ_DIGITS[i % 10 + 1]
    else
      token = us_text .. '.' .. emq_count_text(i)
    end
    scored[i * 2 - 1] = expiry
    scored[i * 2] = id
    leased[i * 2 - 1] = id
    leased[i * 2] = token .. (i <= start and from_now or ahead)
    out[i * 2] = id
    out[i * 2 + 1] = token
  end
  -- active and leases hold an entry per leased job, touched several times per job (leased,
  -- started, completed). A small hash or sorted set is a listpack, where each touch scans every
  -- entry (~2,500 instructions at 30 leases; an HSET of n new leases into one is O(n^2)); a
  -- hashed one costs O(1) (hash) or O(log n) (sorted set) a touch and is never turned back while
  -- the key exists. So while either is a listpack, or absent, one entry too long for a listpack is
  -- written first and removed at once: the key changes encoding, nothing else sees it.
  local wide_active = call('OBJECT', 'ENCODING', k.active) ~= 'skiplist'
  local wide_leases = call('OBJECT', 'ENCODING', k.leases) ~= 'hashtable'
  local wide = (wide_active or wide_leases) and string.rep('~', 1024)
  if wide_active then call('ZADD', k.active, 0, wide) end
  call('ZADD', k.active, unpack(scored))
  if wide_active then call('ZREM', k.active, wide) end
  if wide_leases then call('HSET', k.leases, wide, '') end
  call('HSET', k.leases, unpack(leased))
  if wide_leases then call('HDEL', k.leases, wide) end
  call('XADD', k.events, 'MAXLEN', '~', max_events, '*', 'ev', 'active', 'ids', table.concat(ids, ' '), unpack(tags))
  if wake then
    if #ids == count or more then call('LPUSH', k.marker, '1') else call('DEL', k.marker) end
  end
  return out
end
