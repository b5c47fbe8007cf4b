-- complete: finish a batch of leased jobs with their results, then lease the worker's next jobs in
-- the same call.
-- uses lib/handoff.lua
-- uses lib/groups.lua
-- uses lib/ready.lua
-- uses lib/claim.lua
-- uses lib/batch_note.lua
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
-- KEYS[14] groups      HASH grouped job id -> its group (lib/groups.lua)
-- KEYS[15] group_counts HASH group key -> starts in its current window
-- KEYS[16] group_windows ZSET group key -> end of its current window
-- KEYS[17] handoff     LIST entries an add handed to blocked workers, not taken yet
-- KEYS[18] delayed_priority HASH id -> priority, for delayed jobs that have one
-- KEYS[19] group_ready ZSET the grouped jobs ready to run (lib/groups.lua)
-- KEYS[20] group_turns ZSET group -> pass, the groups that may run
-- KEYS[21] group_parked ZSET group -> pass, ready groups paused or at their cap
-- KEYS[22] group_state HASH each group's settings and running count
-- KEYS[23] batch_pending ZSET batched outcomes on their way to their batch (lib/batch_note.lua)
-- KEYS[24..] job=record+logs record emq:{q}:<id> and logs emq:{q}:<id>:logs, a pair per job
-- ARGV[1] count        next jobs wanted
-- ARGV[2] lease_ms     lease length of the next jobs
-- ARGV[3] max_events   stream cap
-- ARGV[4] start        how many of the next jobs start at once (the rest are leased ahead)
-- ARGV[5] started      "<id> <token> <id> <token> …" (space-separated, may be empty): leased-ahead
--                      jobs whose runs have started (each lease is marked started, stamped now)
-- ARGV[6] latency      the completed runs' latencies (core/src/latency.rs): `<field>=<n>` pairs,
--                      space-separated (may be empty), added to metrics per minute
--                      (`<field>:<minute>`) and to meta for good (`h<field>`)
-- ARGV[7..] job        groups of 4: id, token, result (JSON), and keep ("1" keep the record in
--                      completed, "0" delete it now; "3" and "2" the same for a job of a batch,
--                      whose outcome goes in batch_pending) followed by the job's dedup key (none:
--                      nothing)
-- Returns {{the place (1-based) of each job whose lease was lost: not completed; the others
-- were}, {next due in ms or -1, id, token, …}}.
-- The 'completed' event (one entry per call, `ids`) carries each job's result as a field
-- 'r:<id>' when the result is at most EVENT_VALUE_CAP bytes and the entry's results stay within
-- EVENT_ENTRY_CAP bytes in all; a result left out is read from the record (core/src/events.rs).
local EVENT_VALUE_CAP, EVENT_ENTRY_CAP = 512, 4096
local us_text, now_text, now = now_clock()
local argv, keys = ARGV, KEYS
local find, byte, sub = string.find, string.byte, string.sub
-- (Plain finds and byte compares, no patterns: Lua's pattern matcher costs ~3,000 instructions
-- a lease. Counters, not `#t + 1`, and locals, not globals: each costs the interpreter per job.)
local base = 7
local n = (#argv - base + 1) / 4
-- One read of the leases for the call: the completions' first, then the reported starts'.
local ids = {}
for j = 1, n do ids[j] = argv[base - 4 + j * 4] end
local reports = argv[5]
local ns, sids, stokens, reported = 0, nil, nil, nil
if reports ~= '' then
  sids, stokens, reported = {}, {}, {}
  local at, len = 1, #reports
  while at <= len do
    local gap = find(reports, ' ', at, true)
    if not gap then break end
    local stop = find(reports, ' ', gap + 1, true) or (len + 1)
    local sid = sub(reports, at, gap - 1)
    ns = ns + 1
    sids[ns] = sid
    stokens[ns] = sub(reports, gap + 1, stop - 1)
    reported[sid] = ns
    ids[n + ns] = sid
    at = stop + 1
  end
end
local leases = call('HMGET', K.leases, unpack(ids))
local lost, nlost, done, kept, nkept, dropped, dropped_keys = {}, 0, ids, {}, 0, 0, {}
local results, nresults, budget = {}, 0, EVENT_ENTRY_CAP
-- Reported starts of jobs this call completes need no mark: their leases go below.
local finished
for j = 1, n do
  local a = base - 4 + j * 4
  local id, token, lease = ids[j], argv[a + 1], leases[j]
  if lease and byte(lease, #token + 1) == 124 and find(lease, token, 1, true) == 1 then -- '|'
    local result = argv[a + 2]
    if #result <= EVENT_VALUE_CAP and #result <= budget then
      budget = budget - #result
      results[nresults + 1] = 'r:' .. id
      results[nresults + 2] = result
      nresults = nresults + 2
    end
    local place = reported and reported[id]
    if place then
      finished = finished or {}
      finished[place] = true
    end
    local flags = argv[a + 3]
    if #flags > 1 then
      local dedup = sub(flags, 2)
      if call('HGET', K.dedup, dedup) == id then call('HDEL', K.dedup, dedup) end
    end
    local keep = byte(flags, 1)
    if keep >= 50 then -- '2', '3': a batched job
      emq_batch_pending(K, keys[22 + j * 2], id, 'c', now)
      keep = keep - 2
    end
    if keep == 49 then -- '1'
      local record = keys[22 + j * 2]
      call('HINCRBY', record, 'atts', 1)
      -- "<token>|<start ms>[|a]"; a start reported in this same call (of a job leased ahead) began
      -- now.
      local processed
      if place and byte(lease, -1) == 97 and byte(lease, -2) == 124 then
        processed = now_text
      else
        processed = sub(lease, #token + 2, (find(lease, '|', #token + 2, true) or 0) - 1)
      end
      call('HSET', record, 'result', result, 'processed_ms', processed, 'finished_ms', now_text)
      kept[nkept + 1] = now_text
      kept[nkept + 2] = id
      nkept = nkept + 2
    else
      dropped = dropped + 1
      dropped_keys[dropped * 2 - 1] = keys[22 + j * 2]
      dropped_keys[dropped * 2] = keys[23 + j * 2]
    end
  else
    nlost = nlost + 1
    lost[nlost] = j
  end
end
local ndone = n - nlost
if nlost > 0 then
  -- Rare: the completed ones in a table of their own.
  done = {}
  local at = 1
  for j = 1, n do
    if lost[at] == j then at = at + 1 else done[#done + 1] = ids[j] end
  end
end
if ns > 0 then
  local marks, nmarks = {}, 0
  for i = 1, ns do
    local lease = leases[n + i]
    local token = stokens[i]
    if lease and not (finished and finished[i]) and byte(lease, -1) == 97 and byte(lease, -2) == 124 -- '|a'
        and byte(lease, #token + 1) == 124 and find(lease, token, 1, true) == 1 then
      marks[nmarks + 1] = sids[i]
      marks[nmarks + 2] = token .. '|' .. now_text
      nmarks = nmarks + 2
    end
  end
  if nmarks > 0 then call('HSET', K.leases, unpack(marks)) end
end
if ndone > 0 then
  call('ZREM', K.active, unpack(done, 1, ndone))
  if call('HLEN', K.groups) > 0 then
    -- Grouped jobs free their groups' slots (a parked group rejoins) and their entries go; the
    -- event names each one's group (`g:<id>`).
    for _, v in ipairs(emq_group_left(K, done, 1, ndone)) do
      nresults = nresults + 1
      results[nresults] = v
    end
    call('HDEL', K.groups, unpack(done, 1, ndone))
  end
  if nkept > 0 then call('ZADD', K.completed, unpack(kept)) end
  if dropped > 0 then
    call('DEL', unpack(dropped_keys))
    call('HINCRBY', K.meta, 'gone', emq_count_text(dropped))
  end
  call('XADD', K.events, 'MAXLEN', '~', argv[3], '*', 'ev', 'completed', 'ids', table.concat(done, ' ', 1, ndone),
    unpack(results))
  local minute = string.format('%d', math.floor(now / 60000))
  call('HINCRBY', K.metrics, 'c:' .. minute, emq_count_text(ndone))
  -- Once per call: a handful of buckets, whatever the number of jobs.
  if argv[6] ~= '' then
    for field, count in string.gmatch(argv[6], '(%S+)=(%d+)') do
      call('HINCRBY', K.metrics, field .. ':' .. minute, count)
      call('HINCRBY', K.meta, 'h' .. field, count)
    end
  end
end
if nlost > 0 then call('HINCRBY', K.meta, 'lease_lost', emq_count_text(nlost)) end
local next_jobs = emq_claim(K, us_text, now_text, now, tonumber(argv[1]), tonumber(argv[2]), argv[3], false, ndone,
  tonumber(argv[4]))
-- The finished jobs' leases go after the next jobs' are written: a leases hash emptied here would
-- be rebuilt from scratch as a listpack, where each new field costs a scan of all the others
-- (O(n^2) for a batch of n; ~3.7 million instructions per call at concurrency 100).
if ndone > 0 then call('HDEL', K.leases, unpack(done, 1, ndone)) end
return {lost, next_jobs}
