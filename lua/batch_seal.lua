-- batch_seal: the batch's creator has added its jobs (core/src/batch/): from now on the batch is
-- done, and its callbacks due, once every job counted in has its outcome (jobs its running jobs
-- add count in before they are added, so they hold it open). Idempotent.
-- uses lib/batch.lua
-- KEYS[1] batch        emq:{q}:batch:<id>, HASH
-- ARGV[1] complete_id  a freshly minted id for the on_complete job, used unless one is pinned
-- ARGV[2] success_id   a freshly minted id for the on_success job, used unless one is pinned
-- Returns the due callbacks (lib/batch.lua emq_batch_due); a job_not_found error when there is no
-- such batch.
if call('EXISTS', K.batch) == 0 then fail('job_not_found', 'no such batch') end
call('HSET', K.batch, 'sealed', '1')
return emq_batch_due(K, ARGV[1], ARGV[2], now_ms())
