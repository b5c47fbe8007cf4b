-- metrics_rollup: record this minute's backlog, fold the per-minute counts older than the window
-- into per-hour ones, and drop the hours older than the day kept (workers call it as they trim).
-- Fields of `metrics`: `<kind>:<minute>` (kinds c, f, r<b>, w<b>, rs, ws counted by complete.lua
-- and fail.lua; b the backlog sampled here) and `<kind>:h<hour>` (the same kinds, one per hour:
-- counts added up; b the largest sample of the hour).
-- KEYS[1] metrics      HASH per-minute and per-hour counts
-- KEYS[2] wait         LIST
-- KEYS[3] paused       LIST
-- KEYS[4] prioritized  ZSET
-- KEYS[5] group_ready  ZSET grouped jobs ready to run
-- ARGV[1] window       minutes kept per minute
-- ARGV[2] hours        hours kept per hour
-- Returns the number of per-minute and per-hour fields removed.
local minute_now = math.floor(now_ms() / 60000)
local backlog = call('LLEN', K.wait) + call('LLEN', K.paused) + call('ZCARD', K.prioritized)
  + call('ZCARD', K.group_ready)
call('HSET', K.metrics, 'b:' .. string.format('%d', minute_now), string.format('%d', backlog))
local oldest_minute = minute_now - tonumber(ARGV[1])
local oldest_hour = math.floor(minute_now / 60) - tonumber(ARGV[2])
local all = call('HGETALL', K.metrics)
local gone = {}
for i = 1, #all, 2 do
  local field, value = all[i], all[i + 1]
  local kind, at = string.match(field, '^([^:]+):(.+)$')
  if kind then
    local hour = string.match(at, '^h(%d+)$')
    if hour then
      if tonumber(hour) < oldest_hour then gone[#gone + 1] = field end
    else
      local minute = tonumber(at)
      if minute and minute < oldest_minute then
        local hour_of = math.floor(minute / 60)
        local into = kind .. ':h' .. string.format('%d', hour_of)
        if hour_of < oldest_hour then
          -- older than the day kept (no worker ran for a while): nothing to fold into
        elseif kind == 'b' then
          local had = tonumber(call('HGET', K.metrics, into) or '-1')
          if tonumber(value) > had then call('HSET', K.metrics, into, value) end
        else
          call('HINCRBY', K.metrics, into, value)
        end
        gone[#gone + 1] = field
      end
    end
  end
end
for i = 1, #gone, 500 do
  call('HDEL', K.metrics, unpack(gone, i, math.min(i + 499, #gone)))
end
return #gone
