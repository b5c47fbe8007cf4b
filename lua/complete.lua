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
-- ARGV[6..] job        groups of 4: id, token, result (JSON), and keep ("1" keep the record in
--                      completed, "0" delete it now) followed by the job's dedup key (none: nothing)
-- Returns {{the place (1-based) of each job whose lease was lost: not completed; the others
-- were}, {next due in ms or -1, id, token, …}}.
-- The 'completed' event (one entry per call, `ids`) carries each job's result as a field
-- 'r:<id>' when the result is at most EVENT_VALUE_CAP bytes and the entry's results stay within
-- EVENT_ENTRY_CAP bytes in all; a result left out is read from the record (core/src/events.rs).
local EVENT_VALUE_CAP, EVENT_ENTRY_CAP = 512, 4096
local us_text, now_text, now = now_clock()
-- The starts first (one read, one write for all of them): a job reported here may complete in
-- this same call.
-- (Plain finds and byte compares, no patterns: Lua's pattern matcher costs ~3,000 instructions
-- a lease.)
local function leased_with(lease, token)
  return string.byte(lease, #token + 1) == 124 and string.find(lease, token, 1, true) == 1 -- '|'
end
local reports = ARGV[5]
if reports ~= '' then
  local sids, stokens = {}, {}
  local at, len = 1, #reports
  while at <= len do
    local gap = string.find(reports, ' ', at, true)
    if not gap then break end
    local stop = string.find(reports, ' ', gap + 1, true) or (len + 1)
    sids[#sids + 1] = string.sub(reports, at, gap - 1)
    stokens[#stokens + 1] = string.sub(reports, gap + 1, stop - 1)
    at = stop + 1
  end
  local current = call('HMGET', K.leases, unpack(sids))
  local marks = {}
  for i = 1, #sids do
    local lease = current[i]
    if lease and string.byte(lease, -1) == 97 and string.byte(lease, -2) == 124 -- '|a'
        and leased_with(lease, stokens[i]) then
      marks[#marks + 1] = sids[i]
      marks[#marks + 1] = stokens[i] .. '|' .. now_text
    end
  end
  if #marks > 0 then call('HSET', K.leases, unpack(marks)) end
end
local base = 6
local n = (#ARGV - base + 1) / 4
local ids = {}
for j = 0, n - 1 do ids[#ids + 1] = ARGV[base + j * 4] end
local leases = call('HMGET', K.leases, unpack(ids))
local lost, done, kept, dropped, dropped_keys = {}, {}, {}, 0, {}
local results, budget = {}, EVENT_ENTRY_CAP
for j = 0, n - 1 do
  local a = base + j * 4
  local id = ARGV[a]
  local lease = leases[j + 1]
  if lease and leased_with(lease, ARGV[a + 1]) then
    done[#done + 1] = id
    local result = ARGV[a + 2]
    if #result <= EVENT_VALUE_CAP and #result <= budget then
      budget = budget - #result
      results[#results + 1] = 'r:' .. id
      results[#results + 1] = result
    end
    local record, logs = KEYS[19 + j * 2], KEYS[20 + j * 2]
    local flags = ARGV[a + 3]
    if #flags > 1 then
      local dedup = string.sub(flags, 2)
      if call('HGET', K.dedup, dedup) == id then call('HDEL', K.dedup, dedup) end
    end
    if string.byte(flags, 1) == 49 then -- '1'
      call('HINCRBY', record, 'atts', 1)
      call('HSET', record, 'result', ARGV[a + 2], 'processed_ms', string.match(lease, '|(%d+)'), 'finished_ms', now_text)
      kept[#kept + 1] = now_text
      kept[#kept + 1] = id
    else
      dropped = dropped + 1
      dropped_keys[#dropped_keys + 1] = record
      dropped_keys[#dropped_keys + 1] = logs
    end
  else
    lost[#lost + 1] = j + 1
  end
end
if #done > 0 then
  call('ZREM', K.active, unpack(done))
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
local next_jobs = emq_claim(K, us_text, now_text, now, tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], false, #done,
  tonumber(ARGV[4]))
-- The finished jobs' leases go after the next jobs' are written: a leases hash emptied here would
-- be rebuilt from scratch as a listpack, where each new field costs a scan of all the others
-- (O(n^2) for a batch of n; ~3.7 million instructions per call at concurrency 100).
if #done > 0 then call('HDEL', K.leases, unpack(done)) end
return {lost, next_jobs}
