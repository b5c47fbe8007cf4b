-- complete: finish a batch of leased jobs with their results, then lease the worker's next jobs in
-- the same call.
-- uses lib/handoff.lua
-- uses lib/ready.lua
-- uses lib/claim.lua
-- KEYS[1] active       ZSET
-- KEYS[2] leases       HASH
-- KEYS[3] completed    ZSET id -> finish time
-- KEYS[4] dedup        HASH
-- KEYS[5] wait         LIST
-- KEYS[6] paused       LIST
-- KEYS[7] delayed      ZSET
-- KEYS[8] prioritized  ZSET
-- KEYS[9] meta         HASH
-- KEYS[10] events      STREAM
-- KEYS[11] marker      LIST
-- KEYS[12] limiter     STRING rate-limit counter
-- KEYS[13] metrics     HASH finished counts per minute
-- KEYS[14] groups      HASH job id -> group key (per-group rate limit)
-- KEYS[15] group_counts HASH group key -> starts in its current window
-- KEYS[16] group_windows ZSET group key -> end of its current window
-- KEYS[17] handoff     LIST entries an add handed to blocked workers, not taken yet
-- KEYS[18] delayed_priority HASH id -> priority, for delayed jobs that have one
-- KEYS[19..] job=record+logs record emq:{q}:<id> and logs emq:{q}:<id>:logs, a pair per job
-- ARGV[1] count        next jobs wanted
-- ARGV[2] lease_ms     lease length of the next jobs
-- ARGV[3] max_events   stream cap
-- ARGV[4] start        how many of the next jobs start at once (the rest are leased ahead)
-- ARGV[5] started      "<id> <token> <id> <token> …" (space-separated, may be empty): leased-ahead
--                      jobs whose runs have started (each lease is marked started, stamped now)
-- ARGV[6..] job        groups of 5: id, token, result (JSON), keep ("1" keep the record in
--                      completed, "0" delete it now), dedup ("" none)
-- Returns {{1 or 0 per job: completed, or its lease was lost}, {next due in ms or -1, id, token, …}}.
-- The 'completed' event (one entry per call, `ids`) carries each job's result as a field
-- 'r:<id>' when the result is at most EVENT_VALUE_CAP bytes and the entry's results stay within
-- EVENT_ENTRY_CAP bytes in all; a result left out is read from the record (core/src/events.rs).
local EVENT_VALUE_CAP, EVENT_ENTRY_CAP = 512, 4096
local now_us_ = now_us()
local now = math.floor(now_us_ / 1000)
for sid, stoken in string.gmatch(ARGV[5], '(%S+) (%S+)') do
  local lease = call('HGET', K.leases, sid)
  if lease and string.sub(lease, -2) == '|a' and string.match(lease, '^([^|]*)|') == stoken then
    call('HSET', K.leases, sid, stoken .. '|' .. now)
  end
end
local base = 6
local n = (#ARGV - base + 1) / 5
local ids = {}
for j = 0, n - 1 do ids[#ids + 1] = ARGV[base + j * 5] end
local leases = call('HMGET', K.leases, unpack(ids))
local status, done, kept, dropped, dropped_keys = {}, {}, {}, 0, {}
local results, budget = {}, EVENT_ENTRY_CAP
for j = 0, n - 1 do
  local a = base + j * 5
  local id = ARGV[a]
  local lease = leases[j + 1]
  if lease and string.match(lease, '^([^|]*)|') == ARGV[a + 1] then
    status[#status + 1] = 1
    done[#done + 1] = id
    local result = ARGV[a + 2]
    if #result <= EVENT_VALUE_CAP and #result <= budget then
      budget = budget - #result
      results[#results + 1] = 'r:' .. id
      results[#results + 1] = result
    end
    local record, logs = KEYS[19 + j * 2], KEYS[20 + j * 2]
    local dedup = ARGV[a + 4]
    if dedup ~= '' and call('HGET', K.dedup, dedup) == id then call('HDEL', K.dedup, dedup) end
    if ARGV[a + 3] == '1' then
      call('HINCRBY', record, 'atts', 1)
      call('HSET', record, 'result', ARGV[a + 2], 'processed_ms', string.match(lease, '|(%d+)'), 'finished_ms', now)
      kept[#kept + 1] = now
      kept[#kept + 1] = id
    else
      dropped = dropped + 1
      dropped_keys[#dropped_keys + 1] = record
      dropped_keys[#dropped_keys + 1] = logs
    end
  else
    status[#status + 1] = 0
  end
end
if #done > 0 then
  call('ZREM', K.active, unpack(done))
  call('HDEL', K.leases, unpack(done))
  if #kept > 0 then call('ZADD', K.completed, unpack(kept)) end
  if dropped > 0 then
    call('DEL', unpack(dropped_keys))
    call('HINCRBY', K.meta, 'gone', dropped)
  end
  call('XADD', K.events, 'MAXLEN', '~', ARGV[3], '*', 'ev', 'completed', 'ids', table.concat(done, ' '),
    unpack(results))
  call('HINCRBY', K.metrics, 'c:' .. math.floor(now / 60000), #done)
end
if #done < n then call('HINCRBY', K.meta, 'lease_lost', n - #done) end
return {status, emq_claim(K, now_us_, tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], false, #done, tonumber(ARGV[4]))}
