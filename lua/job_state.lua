-- job_state: read one job's record and the state it is in (which container holds it).
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] wait         LIST
-- KEYS[3] paused       LIST
-- KEYS[4] active       ZSET
-- KEYS[5] delayed      ZSET
-- KEYS[6] prioritized  ZSET
-- KEYS[7] completed    ZSET
-- KEYS[8] failed       ZSET
-- KEYS[9] stalled      SET
-- KEYS[10] waiting_children ZSET
-- KEYS[11] groups      HASH grouped job id -> its group-ready member while it waits (lib/groups.lua)
-- ARGV[1] id
-- Returns {state, field, value, …}, or {} when there is no such job.
local id = ARGV[1]
local record = call('HGETALL', K.record)
if #record == 0 then return {} end

-- The time part of an id's text ('j' + Crockford base32, fixed width, so text order is creation
-- order): its first 9 digits, 45 bits, exact in a Lua number. nil for text no core minted.
local DIGITS = '0123456789abcdefghjkmnpqrstvwxyz'
local function stamp(text)
  if type(text) ~= 'string' or #text ~= 16 then return nil end
  local v = 0
  for i = 2, 10 do
    local d = string.find(DIGITS, string.sub(text, i, i), 1, true)
    if not d then return nil end
    v = v * 32 + (d - 1)
  end
  return v
end

-- Whether a wait list holds the id: LPOS, O(the id's distance from where it starts). A list
-- holds the newest at its left end and the oldest at its right, and ids are minted in time order,
-- so the search starts from the end whose id is nearer in time to this one (searched from either
-- end, a miss reads the whole list).
local function listed(list)
  local n = call('LLEN', list)
  if n == 0 then return false end
  local rank = 1
  if n > 2 then
    local t = stamp(id)
    local newest, oldest = stamp(call('LINDEX', list, 0)), stamp(call('LINDEX', list, -1))
    if t and newest and oldest and math.abs(oldest - t) < math.abs(newest - t) then rank = -1 end
  end
  return call('LPOS', list, id, 'RANK', rank) ~= false
end

-- The sorted sets and the set first (one O(1) or O(log n) read each), the lists last.
local state = 'unknown'
if call('ZSCORE', K.active, id) then state = 'active'
elseif call('ZSCORE', K.delayed, id) then state = 'delayed'
elseif call('ZSCORE', K.prioritized, id) then state = 'prioritized'
elseif call('ZSCORE', K.completed, id) then state = 'completed'
elseif call('ZSCORE', K.failed, id) then state = 'failed'
elseif call('SISMEMBER', K.stalled, id) == 1 then state = 'stalled'
elseif call('ZSCORE', K.waiting_children, id) then state = 'waiting-children'
elseif string.find(call('HGET', K.groups, id) or '', '\0', 1, true) then state = 'waiting'
elseif listed(K.wait) then state = 'waiting'
elseif listed(K.paused) then state = 'paused'
end
local out = {state}
for i = 1, #record do out[#out + 1] = record[i] end
return out
