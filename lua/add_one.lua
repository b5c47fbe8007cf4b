-- add_one: add one plain job (no delay, priority, dedup key, group, parent or LIFO; any attempts and
-- stored options); idempotent (an add of an id whose record exists changes nothing). The same
-- transition as add.lua for such a job, with only the keys and arguments it can touch: a web
-- application's one-job add is the call made most, and every KEYS/ARGV entry and every line of a
-- batch loop costs the server on each call (bench/RESULTS.md, "where the time goes").
-- uses lib/handoff.lua
-- KEYS[1] wait         LIST
-- KEYS[2] paused       LIST
-- KEYS[3] prioritized  ZSET (read: a waiting prioritized job goes before a hand-off)
-- KEYS[4] delayed      ZSET (read: a delayed job already due goes before a hand-off)
-- KEYS[5] meta         HASH
-- KEYS[6] events       STREAM
-- KEYS[7] marker       LIST ("1", or the id an idle worker should claim)
-- KEYS[8] waiters      ZSET "<worker>|<lease_ms>" -> end of its blocking wait (wait_register.lua)
-- KEYS[9] handoff      LIST entries handed to blocked workers
-- KEYS[10] active      ZSET id -> lease expiry
-- KEYS[11] leases      HASH id -> "<token>|<start ms>"
-- KEYS[12] record      HASH emq:{q}:<id>
-- ARGV[1] max_events   stream cap
-- ARGV[2] id           the job's id
-- ARGV[3] name         the job's name
-- ARGV[4] data         the payload (JSON)
-- ARGV[5] opts         stored options (JSON, non-default options only; "{}" none)
-- ARGV[6] attempts     attempts allowed ("1" the default)
-- Hand-off as in add.lua: added while the queue is empty, unpaused and unlimited, with a worker
-- registered in waiters, the job is leased here and its entry pushed on `handoff`.
-- Returns {} when the job was added, {"0", id} when its record already existed (add.lua's reply).
local id = ARGV[2]
if call('EXISTS', K.record) == 1 then return {'0', id} end
local us_text, now_text, now = now_clock()
local m = call('HMGET', K.meta, 'paused', 'grl_max', 'concurrency', 'rl_max')
local paused = m[1] == '1'
local fields = {'name', ARGV[3], 'data', ARGV[4], 'created_ms', now_text}
if ARGV[5] ~= '{}' then fields[#fields + 1] = 'opts'; fields[#fields + 1] = ARGV[5] end
if ARGV[6] ~= '1' then fields[#fields + 1] = 'attempts'; fields[#fields + 1] = ARGV[6] end
call('HSET', K.record, unpack(fields))
call('HINCRBY', K.meta, 'added', '1')
if not (paused or m[2] or m[3] or m[4]) and call('LLEN', K.wait) == 0
  and call('ZCARD', K.prioritized) == 0 then
  call('ZREMRANGEBYSCORE', K.waiters, '-inf', now)
  local due = call('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')
  -- A delayed job already due goes first: the worker's claim promotes it.
  local waiter = not (due[2] and tonumber(due[2]) <= now) and call('ZPOPMAX', K.waiters) or {}
  if waiter[1] then
    -- The server's microseconds as TIME's digits (a Lua number prints only 14 of its 16).
    local token = us_text .. '.h0'
    call('ZADD', K.active, now + tonumber(string.match(waiter[1], '|(%d+)$')), id)
    -- Leased ahead: the worker reports the start when a slot takes it (lib/claim.lua).
    call('HSET', K.leases, id, token .. '|' .. now_text .. '|a')
    call('LPUSH', K.handoff, emq_handoff_entry(id, token, fields))
    call('XADD', K.events, 'MAXLEN', '~', ARGV[1], '*', 'ev', 'added', 'ids', id)
    call('XADD', K.events, 'MAXLEN', '~', ARGV[1], '*', 'ev', 'active', 'ids', id)
    return {}
  end
end
local n = call('LPUSH', paused and K.paused or K.wait, id)
if n == 1 and not paused then
  -- The list was empty, so a worker may be idle: its marker names the job it will pop next,
  -- letting it claim and read that job in one call (claim_id.lua).
  call('LPUSH', K.marker, id)
end
call('XADD', K.events, 'MAXLEN', '~', ARGV[1], '*', 'ev', 'added', 'ids', id)
return {}
