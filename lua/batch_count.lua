-- batch_count: the first step of adding jobs to a batch (core/src/batch/), in the batch's slot,
-- before the jobs are added to their queues: each job is counted in once under its id (pinned by
-- the caller), pending. Idempotent: a job counted in already is not counted again.
-- KEYS[1] batch        emq:{q}:batch:<id>, HASH
-- KEYS[2] batch_jobs   HASH job id -> <state>|<queue>
-- ARGV[1..] job        pairs: job id, its queue
-- Returns how many jobs were counted in now; a job_not_found error when there is no such batch,
-- an invalid_state error when it was cancelled or is done (every job had its outcome once it was
-- sealed: its callbacks are due).
if call('EXISTS', K.batch) == 0 then fail('job_not_found', 'no such batch') end
local b = call('HMGET', K.batch, 'cancelled', 'done_ms')
if b[1] == '1' then fail('invalid_state', 'the batch was cancelled') end
if b[2] then fail('invalid_state', 'the batch is done: every job has its outcome') end
local n = 0
for i = 1, #ARGV, 2 do
  n = n + call('HSETNX', K.batch_jobs, ARGV[i], 'p|' .. ARGV[i + 1])
end
if n > 0 then call('HINCRBY', K.batch, 'total', n) end
return n
