-- batch_seal: the batch's creator has added its jobs (core/src/batch/): from now on the batch is
-- done, and its callbacks due, once every job counted in has its outcome (jobs its running jobs
-- add count in before they are added, so they hold it open). Idempotent.
-- uses lib/batch.lua
-- KEYS[1] batch        emq:{q}:batch:<id>, HASH
-- KEYS[2] batch_pending ZSET the batch's queue's outcomes on their way (its note for a parent)
-- ARGV[1] complete_id  a freshly minted id for the on_complete job, used unless one is pinned
-- ARGV[2] success_id   a freshly minted id for the on_success job, used unless one is pinned
-- Returns {the note for its parent batch when it has one and is done ('' otherwise: lib/batch.lua
-- emq_batch_note_parent), then the due callbacks (emq_batch_due)}; a job_not_found error when
-- there is no such batch.
if call('EXISTS', K.batch) == 0 then fail('job_not_found', 'no such batch') end
call('HSET', K.batch, 'sealed', '1')
local now = now_ms()
local out = {emq_batch_note_parent(K, now)}
for _, v in ipairs(emq_batch_due(K, ARGV[1], ARGV[2], now)) do out[#out + 1] = v end
return out
