-- debounce: a job added with a dedup key that a delayed job already holds replaces that job's data
-- and pushes its due time to now + delay_ms.
-- KEYS[1] record       emq:{q}:<id> of the job holding the key, HASH
-- KEYS[2] delayed      ZSET
-- KEYS[3] dedup        HASH
-- KEYS[4] events       STREAM
-- ARGV[1] id           the holder's id
-- ARGV[2] dedup        the dedup key
-- ARGV[3] data         the new payload (JSON)
-- ARGV[4] delay_ms     the new delay from now
-- ARGV[5] max_events   stream cap
-- Returns 1 when debounced, 0 when the holder no longer holds the key or is not delayed any more.
local id = ARGV[1]
local held = call('HGET', K.dedup, ARGV[2])
-- A live hold is the id itself; a TTL hold is "<id>|<until ms>".
if not held or (held ~= id and string.sub(held, 1, #id + 1) ~= id .. '|') then return 0 end
if not call('ZSCORE', K.delayed, id) then return 0 end
call('HSET', K.record, 'data', ARGV[3])
call('ZADD', K.delayed, 'XX', now_ms() + tonumber(ARGV[4]), id)
call('XADD', K.events, 'MAXLEN', '~', ARGV[5], '*', 'ev', 'debounced', 'id', id)
return 1
