-- batch_record: record a batched job's outcome in its batch (core/src/batch/), in the batch's
-- slot, after the job's finish script noted it in its own queue's batch-pending set. Once per job
-- and outcome: pending -> completed or failed, failed -> completed (a failed job retried to
-- success); anything else changes nothing. Then returns the callbacks due.
-- uses lib/batch.lua
-- KEYS[1] batch        emq:{q}:batch:<id>, HASH
-- KEYS[2] batch_jobs   HASH job id -> <state>|<queue>
-- KEYS[3] batch_failed ZSET <queue>:<job id> -> failed (server ms)
-- KEYS[4] batch_pending ZSET the batch's queue's outcomes on their way (its note for a parent)
-- ARGV[1] job_id       the batched job
-- ARGV[2] outcome      'c' completed, 'f' failed for good
-- ARGV[3] complete_id  a freshly minted id for the on_complete job, used unless one is pinned
-- ARGV[4] success_id   a freshly minted id for the on_success job, used unless one is pinned
-- Returns {1 when counted now else 0, the note for its parent batch when it has one and is done
-- ('' otherwise: lib/batch.lua emq_batch_note_parent), then the due callbacks (emq_batch_due)}.
local id, o = ARGV[1], ARGV[2]
local cur = call('HGET', K.batch_jobs, id)
if not cur or call('EXISTS', K.batch) == 0 then return {0} end
local state, queue = string.sub(cur, 1, 1), string.sub(cur, 3)
local now = now_ms()
local counted = 0
if state == 'p' or (state == 'f' and o == 'c') then
  call('HSET', K.batch_jobs, id, o .. '|' .. queue)
  if state == 'f' then
    call('HINCRBY', K.batch, 'failed', -1)
    call('ZREM', K.batch_failed, queue .. ':' .. id)
  end
  if o == 'c' then
    call('HINCRBY', K.batch, 'completed', 1)
  else
    call('HINCRBY', K.batch, 'failed', 1)
    call('ZADD', K.batch_failed, now, queue .. ':' .. id)
  end
  counted = 1
end
local out = {counted, emq_batch_note_parent(K, now)}
for _, v in ipairs(emq_batch_due(K, ARGV[3], ARGV[4], now)) do out[#out + 1] = v end
return out
