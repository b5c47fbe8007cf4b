-- batch_add: add jobs to their queue as part of a batch that lives in the same slot (the batch's
-- own queue; core/src/batch/), counting them in within the same call: the one step that
-- batch_count.lua and then add.lua take for a batch in another slot. The add is add.lua's
-- (lib/add.lua; the same keys by name, arguments, refusals and reply); each job added now is
-- counted in pending, so a retried call (same ids) counts none twice, and a job whose id exists
-- already is not counted by this call. Each record written names its batch in its own field,
-- `batch` = `<queue>|<batch id>` (a job of a batch in another slot carries it in its options
-- instead; lib/batch_note.lua and core/src/job.rs read both).
-- uses lib/handoff.lua
-- uses lib/groups.lua
-- uses lib/ready.lua
-- uses lib/add.lua
-- KEYS[1] wait         LIST
-- KEYS[2] paused       LIST
-- KEYS[3] delayed      ZSET
-- KEYS[4] prioritized  ZSET
-- KEYS[5] meta         HASH
-- KEYS[6] events       STREAM
-- KEYS[7] dedup        HASH dedup key (user data) -> id of the live job holding it
-- KEYS[8] marker       LIST ("1", or the id an idle worker should claim)
-- KEYS[9] groups       HASH grouped job id -> its group (user data), or its group-ready member
-- KEYS[10] dedup_expiry ZSET dedup key -> when its TTL hold ends (keys held for a TTL only)
-- KEYS[11] waiters     ZSET "<worker>|<lease_ms>" -> end of its blocking wait (wait_register.lua)
-- KEYS[12] handoff     LIST entries handed to blocked workers
-- KEYS[13] active      ZSET id -> lease expiry
-- KEYS[14] leases      HASH id -> "<token>|<start ms>"
-- KEYS[15] delayed_priority HASH id -> priority, for delayed jobs that have one
-- KEYS[16] group_ready ZSET the grouped jobs ready to run (lib/groups.lua)
-- KEYS[17] group_turns ZSET group -> pass, the groups that may run
-- KEYS[18] group_parked ZSET group -> pass, ready groups paused or at their cap
-- KEYS[19] group_state HASH each group's settings (`m|<g>` most waiting) and running count
-- KEYS[20] group_names ZSET the groups known to the queue (Queue::groups)
-- KEYS[21] batch       emq:{q}:batch:<id>, HASH
-- KEYS[22] batch_jobs  HASH job id -> <state>|<queue>
-- KEYS[23..] record    emq:{q}:<id>, HASH, one per job, in the order of the job groups below
-- ARGV[1] max_events   stream cap
-- ARGV[2] refusal      as add.lua's
-- ARGV[3] queue        this queue's name, the batch's (its entry for each job names it)
-- ARGV[4] batch_id     the batch's id
-- ARGV[5..] job        groups of 7, as add.lua's
-- Returns add.lua's reply; a job_not_found error when there is no such batch, an invalid_state
-- error when it was cancelled or is done (as batch_count.lua's), before anything is written.
-- Costs (bench/RESULTS.md "Batches"): against batch_count.lua then add.lua, one call and round
-- trip fewer per chunk, the ids neither sent nor cut twice, and the batch named once per call
-- (not in each job's options: ~50 bytes less per job sent and stored).
if call('EXISTS', K.batch) == 0 then fail('job_not_found', 'no such batch') end
local b = call('HMGET', K.batch, 'cancelled', 'done_ms')
if b[1] == '1' then fail('invalid_state', 'the batch was cancelled') end
if b[2] then fail('invalid_state', 'the batch is done: every job has its outcome') end
local out, added = emq_add(K, 23, 5, ARGV[1], ARGV[2], ARGV[3] .. '|' .. ARGV[4])
if #added > 0 then
  local entry = 'p|' .. ARGV[3]
  local set = {}
  for i = 1, #added do
    set[#set + 1] = added[i]
    set[#set + 1] = entry
  end
  call('HSET', K.batch_jobs, unpack(set))
  call('HINCRBY', K.batch, 'total', #added)
end
return out
