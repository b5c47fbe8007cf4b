-- claim (library): lease up to `count` ready jobs; used by claim.lua and complete.lua.
-- Touches only the queue's containers, passed in by the including script; never a job's own key.
-- KEYS: none of its own. ARGV: none of its own.
--
-- Promotes due delayed jobs into wait (or paused), then, unless the queue is paused, pops from
-- prioritized (lowest score first) and from the right of wait, scores each id in active with its
-- lease expiry, and stores "<token>|<start ms>" in leases. Pushes a marker to wake another worker if
-- ready jobs remain, clears the markers when none do. Returns {next due in ms or -1, id, token, …}.
local function emq_claim(k, now, count, lease_ms, max_events)
  local paused = call('HGET', k.meta, 'paused') == '1'
  local due = call('ZRANGEBYSCORE', k.delayed, '-inf', now, 'LIMIT', 0, 1000)
  if #due > 0 then
    call('ZREM', k.delayed, unpack(due))
    call('LPUSH', paused and k.paused or k.wait, unpack(due))
  end
  local out = {-1}
  local head = call('ZRANGE', k.delayed, 0, 0, 'WITHSCORES')
  if head[2] then out[1] = math.max(0, tonumber(head[2]) - now) end
  if paused or count <= 0 then return out end
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
    call('DEL', k.marker)
    return out
  end
  local last = call('HINCRBY', k.meta, 'lease_seq', #ids)
  local expiry = now + lease_ms
  for i = 1, #ids do
    local token = tostring(last - #ids + i)
    call('ZADD', k.active, expiry, ids[i])
    call('HSET', k.leases, ids[i], token .. '|' .. now)
    out[#out + 1] = ids[i]
    out[#out + 1] = token
  end
  call('XADD', k.events, 'MAXLEN', '~', max_events, '*', 'ev', 'active', 'n', #ids, 'id', ids[1])
  if call('LLEN', k.wait) + call('ZCARD', k.prioritized) > 0 then
    call('LPUSH', k.marker, '1')
  else
    call('DEL', k.marker)
  end
  return out
end
