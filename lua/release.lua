-- release: give a worker's unfinished jobs back to the front of wait (graceful shutdown); the
-- attempt is not counted.
-- KEYS[1] active       ZSET
-- KEYS[2] leases       HASH
-- KEYS[3] wait         LIST
-- KEYS[4] paused       LIST
-- KEYS[5] meta         HASH
-- KEYS[6] events       STREAM
-- KEYS[7] marker       LIST
-- ARGV[1] max_events   stream cap
-- ARGV[2..] job        id, token pairs
-- Returns the number of jobs released.
local paused = call('HGET', KEYS[5], 'paused') == '1'
local n = 0
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  local lease = call('HGET', KEYS[2], id)
  if lease and string.match(lease, '^([^|]*)|') == ARGV[i + 1] then
    call('ZREM', KEYS[1], id)
    call('HDEL', KEYS[2], id)
    call('RPUSH', paused and KEYS[4] or KEYS[3], id)
    call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[1], '*', 'ev', 'released', 'id', id)
    n = n + 1
  end
end
if n > 0 and not paused then call('LPUSH', KEYS[7], '1') end
return n
