-- ready (library), after lib/groups.lua: the one place a job that leaves delayed, active, stalled, failed or
-- waiting-children becomes ready to run again. A job with a priority goes to prioritized (so it
-- keeps its priority across a delay, a group hold, a retry, a stall or a shutdown release); any
-- other to wait, or to paused while the queue is paused. Waking a worker is the caller's part.
-- Used by lib/claim.lua (due delayed jobs), promote_job.lua, fail.lua, recover.lua, release.lua,
-- retry_job.lua and child_done.lua; add.lua scores new jobs the same way.
-- KEYS: none of its own. ARGV: none of its own.

-- A prioritized job's score: its priority above, its order among jobs of that priority below.
local EMQ_PRIORITY_SPAN = 4294967296

-- The priority a prioritized score carries.
local function emq_priority_of(score)
  return math.floor(tonumber(score) / EMQ_PRIORITY_SPAN)
end

-- Makes `ids` ready in the queue whose containers are in `k` (k.wait, k.paused, k.prioritized,
-- k.meta; and the group containers of lib/groups.lua: a job with an entry in k.groups waits in its
-- group, whether or not the queue is paused). `priorities[i]` is the priority of `ids[i]` (nil, false, '' or 0: none). `front`: ahead
-- of the ready jobs (of its priority), for a run that was interrupted or failed; otherwise behind
-- them, as a new job. `paused`: the queue's paused flag.
local function emq_ready(k, ids, priorities, front, paused)
  local plain = {}
  local groups = nil
  if call('HLEN', k.groups) > 0 then groups = call('HMGET', k.groups, unpack(ids)) end
  for i = 1, #ids do
    local p = tonumber(priorities[i] or '0') or 0
    if groups and groups[i] then
      local g, member = emq_group_of(groups[i])
      if member then call('ZREM', k.group_ready, member) end
      emq_group_ready(k, ids[i], g, p, front)
    elseif p > 0 then
      -- Ahead: order 0 (ties among those go by id, that is by age); behind: the next sequence.
      local order = front and 0 or (call('HINCRBY', k.meta, 'prio_seq', 1) % EMQ_PRIORITY_SPAN)
      call('ZADD', k.prioritized, p * EMQ_PRIORITY_SPAN + order, ids[i])
    else
      plain[#plain + 1] = ids[i]
    end
  end
  if #plain > 0 then
    -- Workers pop wait from the right: RPUSH is the front, LPUSH the back.
    call(front and 'RPUSH' or 'LPUSH', paused and k.paused or k.wait, unpack(plain))
  end
end
