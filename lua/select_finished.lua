-- select_finished: pick finished job ids to trim or clean, by count and age on the server's clock.
-- KEYS[1] finished=completed|failed the completed or failed ZSET (id -> finish time)
-- ARGV[1] keep         keep at least the newest this many (-1: no count limit)
-- ARGV[2] age_ms       select those finished longer ago than this (-1: no age limit)
-- ARGV[3] limit        most ids returned
-- Returns ids, oldest first; remove_job.lua then removes each (re-checking its state).
local keep, age, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local ids = {}
local seen = {}
if keep >= 0 then
  local excess = call('ZCARD', K.finished) - keep
  if excess > 0 then
    for _, id in ipairs(call('ZRANGE', K.finished, 0, math.min(excess, limit) - 1)) do
      ids[#ids + 1] = id
      seen[id] = true
    end
  end
end
if age >= 0 and #ids < limit then
  for _, id in ipairs(call('ZRANGEBYSCORE', K.finished, '-inf', '(' .. (now_ms() - age), 'LIMIT', 0, limit)) do
    if not seen[id] and #ids < limit then ids[#ids + 1] = id end
  end
end
return ids
