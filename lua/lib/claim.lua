-- claim (library): lease up to `count` ready jobs; used by claim.lua and complete.lua.
-- Touches only the queue's containers, passed in by the including script; never a job's own key.
-- KEYS: none of its own. ARGV: none of its own.
--
-- Honours the queue's settings in meta: `paused`, `concurrency` (most jobs active across all
-- workers) and `rl_max` per `rl_window_ms` (a fixed-window rate limit counted in the limiter key).
-- Promotes due delayed jobs into wait (or paused), then, unless the queue is paused, pops from
-- prioritized (lowest score first) and from the right of wait, scores each id in active with its
-- lease expiry, and stores "<token>|<start ms>" in leases (the token is the server's microsecond
-- clock and the job's place in the batch, so no two leases of a job share one). With `wake`, pushes
-- a marker to wake another worker when the batch came back full, and clears the markers when it did
-- not. `freed` jobs just left active: with a concurrency limit, another worker is woken for them.
-- Returns {next due in ms or -1, id, token, …}.
local function emq_claim(k, now_us, count, lease_ms, max_events, wake, freed)
  local now = math.floor(now_us / 1000)
  local m = call('HMGET', k.meta, 'paused', 'concurrency', 'rl_max', 'rl_window_ms')
  local paused = m[1] == '1'
  local maxc, rl = tonumber(m[2]), tonumber(m[3])
  local out = {-1}
  local head = call('ZRANGE', k.delayed, 0, 0, 'WITHSCORES')
  if head[2] and tonumber(head[2]) <= now then
    local due = call('ZRANGEBYSCORE', k.delayed, '-inf', now, 'LIMIT', 0, 1000)
    call('ZREM', k.delayed, unpack(due))
    call('LPUSH', paused and k.paused or k.wait, unpack(due))
    head = call('ZRANGE', k.delayed, 0, 0, 'WITHSCORES')
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
  local popped = call('ZPOPMIN', k.prioritized, count)
  for i = 1, #popped, 2 do ids[#ids + 1] = popped[i] end
  if #ids < count then
    local more = call('RPOP', k.wait, count - #ids)
    if more then
      for i = 1, #more do ids[#ids + 1] = more[i] end
    end
  end
  if #ids == 0 then
    if wake then call('DEL', k.marker) end
    return out
  end
  if rl then
    if call('INCRBY', k.limiter, #ids) == #ids then call('PEXPIRE', k.limiter, tonumber(m[4])) end
  end
  local expiry = now + lease_ms
  local scored, leased = {}, {}
  for i = 1, #ids do
    local token = now_us .. '.' .. i
    scored[#scored + 1] = expiry
    scored[#scored + 1] = ids[i]
    leased[#leased + 1] = ids[i]
    leased[#leased + 1] = token .. '|' .. now
    out[#out + 1] = ids[i]
    out[#out + 1] = token
  end
  call('ZADD', k.active, unpack(scored))
  call('HSET', k.leases, unpack(leased))
  call('XADD', k.events, 'MAXLEN', '~', max_events, '*', 'ev', 'active', 'ids', table.concat(ids, ' '))
  if wake then
    if #ids == count then call('LPUSH', k.marker, '1') else call('DEL', k.marker) end
  end
  return out
end
