-- batch_count: the first step of adding jobs to a batch (core/src/batch/), in the batch's slot,
-- before the jobs are added to their queues: each job is counted in once under its id (pinned by
-- the caller), pending. Idempotent: a job counted in already is not counted again.
-- KEYS[1] batch        emq:{q}:batch:<id>, HASH
-- KEYS[2] batch_jobs   HASH job id -> <state>|<queue>
-- ARGV[1]    queue        the jobs' queue (every job of one call goes to the same queue)
-- ARGV[2]    ids          the job ids end to end, each 16 characters (JobId's text,
--                         core/src/job_id.rs TEXT_LEN)
-- ARGV[3]    fresh        '1' when the caller minted every id in this call (no job has them yet,
--                         so no entry can be past pending and a write over one changes nothing:
--                         HSET's own count of new fields counts in); else ''
-- Returns how many jobs were counted in now; a job_not_found error when there is no such batch,
-- an invalid_state error when it was cancelled or is done (every job had its outcome once it was
-- sealed: its callbacks are due).
-- Costs (bench/RESULTS.md "Batches"): one HMGET reads which ids are counted in already (not
-- for fresh ids) and one HSET counts in the rest (an HSETNX per job cost a command each); the ids come as one argument
-- (each argument costs the server more than cutting the text here).
if call('EXISTS', K.batch) == 0 then fail('job_not_found', 'no such batch') end
local b = call('HMGET', K.batch, 'cancelled', 'done_ms')
if b[1] == '1' then fail('invalid_state', 'the batch was cancelled') end
if b[2] then fail('invalid_state', 'the batch is done: every job has its outcome') end
local packed = ARGV[2]
if #packed % 16 ~= 0 then fail('internal', 'batch_count: ids are 16 characters each') end
if #packed == 0 then return 0 end
local ids = {}
for i = 1, #packed, 16 do ids[#ids + 1] = string.sub(packed, i, i + 15) end
local entry = 'p|' .. ARGV[1]
local set, seen, n = {}, {}, 0
if ARGV[3] == '1' then
  for i = 1, #ids do
    set[#set + 1] = ids[i]
    set[#set + 1] = entry
  end
  n = call('HSET', K.batch_jobs, unpack(set))
  if n > 0 then call('HINCRBY', K.batch, 'total', n) end
  return n
end
local have = call('HMGET', K.batch_jobs, unpack(ids))
for i = 1, #ids do
  local id = ids[i]
  if not have[i] and not seen[id] then
    seen[id] = true
    set[#set + 1] = id
    set[#set + 1] = entry
    n = n + 1
  end
end
if n > 0 then
  call('HSET', K.batch_jobs, unpack(set))
  call('HINCRBY', K.batch, 'total', n)
end
return n
