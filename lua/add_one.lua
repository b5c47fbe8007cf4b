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
-- ARGV[1] name         the job's name
-- ARGV[2] data         the payload (JSON)
-- ARGV[3..] tail       opts, attempts, max_events, in that order, each sent only when it or one
--                      after it differs from its default: stored options (JSON, non-default
--                      options only; absent: none), attempts allowed (absent: 1, not stored),
--                      the events stream's cap (absent: 10000, core/src/queue/mod.rs
--                      DEFAULT_MAX_EVENTS). The job's id is the record key's last part.
-- Hand-off as in add.lua: added while the queue is empty, unpaused and unlimited, with a worker
-- registered in waiters, the job is leased here and its entry pushed on `handoff`.
-- Returns {} when the job was added, {"0", id} when its record already existed (add.lua's reply).
-- Each KEYS/ARGV entry, table and string the common path (the wait list not empty) makes costs the
-- server on every call, so it sends no id (the record key has it) and no default, builds the
-- record's fields only for a hand-off, pushes before it looks whether the list was empty (the
-- LPUSH reply says, where an LLEN cost a command), reads the queue's limits only then (the
-- common path reads `paused` alone) and reads the clock as text only.
local id = string.sub(K.record, #K.wait - 3) -- emq:{q}:wait and emq:{q}:<id>
if call('EXISTS', K.record) == 1 then return {'0', id} end
local opts, attempts, cap = ARGV[3], ARGV[4], ARGV[5] or '10000'
if opts == '{}' then opts = nil end -- sent as defaults only to reach a later one
if attempts == '1' then attempts = nil end
local now_text, time = now_ms_text()
local paused = call('HGET', K.meta, 'paused') == '1'
if opts and attempts then
  call('HSET', K.record, 'name', ARGV[1], 'data', ARGV[2], 'created_ms', now_text, 'opts', opts,
    'attempts', attempts)
elseif opts then
  call('HSET', K.record, 'name', ARGV[1], 'data', ARGV[2], 'created_ms', now_text, 'opts', opts)
elseif attempts then
  call('HSET', K.record, 'name', ARGV[1], 'data', ARGV[2], 'created_ms', now_text,
    'attempts', attempts)
else
  call('HSET', K.record, 'name', ARGV[1], 'data', ARGV[2], 'created_ms', now_text)
end
call('HINCRBY', K.meta, 'added', '1')
if call('LPUSH', paused and K.paused or K.wait, id) == 1 and not paused then
  -- The list was empty. With no limit and nothing prioritized, a worker blocked in waiters takes
  -- the job at once (a delayed job already due goes first: the worker's claim promotes it).
  local m = call('HMGET', K.meta, 'grl_max', 'concurrency', 'rl_max')
  if not (m[1] or m[2] or m[3]) and call('ZCARD', K.prioritized) == 0 then
    local now = tonumber(now_text)
    call('ZREMRANGEBYSCORE', K.waiters, '-inf', now)
    local due = call('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')
    local waiter = not (due[2] and tonumber(due[2]) <= now) and call('ZPOPMAX', K.waiters) or {}
    if waiter[1] then
      call('LPOP', K.wait) -- the job just pushed, the list's only entry: handed off instead
      local token = us_text_of(time) .. '.h0'
      call('ZADD', K.active, now + tonumber(string.match(waiter[1], '|(%d+)$')), id)
      -- Leased ahead: the worker reports the start when a slot takes it (lib/claim.lua).
      call('HSET', K.leases, id, token .. '|' .. now_text .. '|a')
      local fields = {'name', ARGV[1], 'data', ARGV[2], 'created_ms', now_text}
      if opts then fields[#fields + 1] = 'opts'; fields[#fields + 1] = opts end
      if attempts then fields[#fields + 1] = 'attempts'; fields[#fields + 1] = attempts end
      call('LPUSH', K.handoff, emq_handoff_entry(id, token, fields))
      call('XADD', K.events, 'MAXLEN', '~', cap, '*', 'ev', 'added', 'ids', id)
      call('XADD', K.events, 'MAXLEN', '~', cap, '*', 'ev', 'active', 'ids', id)
      return {}
    end
  end
  -- A worker may be idle: its marker names the job it will pop next, letting it claim and read
  -- that job in one call (claim_id.lua).
  call('LPUSH', K.marker, id)
end
call('XADD', K.events, 'MAXLEN', '~', cap, '*', 'ev', 'added', 'ids', id)
return {}
