-- dedup_expire: drop dedup keys whose TTL hold has ended (a later add would treat them as free
-- anyway; this keeps the hash from growing).
-- KEYS[1] dedup        HASH dedup key -> holder
-- KEYS[2] dedup_expiry ZSET dedup key -> when its TTL hold ends
-- ARGV[1] most         most keys to drop in one call
-- Returns the number of keys dropped.
local now = now_ms()
local due = call('ZRANGEBYSCORE', K.dedup_expiry, '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local n = 0
for _, key in ipairs(due) do
  local held = call('HGET', K.dedup, key)
  local ends = held and string.match(held, '|(%d+)$')
  if ends and tonumber(ends) <= now then
    call('HDEL', K.dedup, key)
    n = n + 1
  end
end
if #due > 0 then call('ZREM', K.dedup_expiry, unpack(due)) end
return n
