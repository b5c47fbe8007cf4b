-- batch_nest: create a batch inside a batch (core/src/batch/), both in the slot of the queue that
-- holds the parent: the child is counted in its parent as one pending job (under the child's id)
-- and created with its parent's note, so that once it is done its outcome is noted for the parent
-- (lib/batch.lua emq_batch_note_parent) as a job's is. Idempotent: a second call with the same
-- child id changes nothing.
-- KEYS[1] batch        the child's emq:{q}:batch:<id>, HASH
-- KEYS[2] batches      ZSET batch id -> created (server ms)
-- KEYS[3] parent=batch the parent's emq:{q}:batch:<id>, HASH
-- KEYS[4] parent_jobs=batch_jobs the parent's HASH job id -> <state>|<queue>
-- ARGV[1] id           the child's id (minted by the caller)
-- ARGV[2] description  words for people ('' none)
-- ARGV[3] on_complete  the callback's spec, JSON ('' none)
-- ARGV[4] on_success   the callback's spec, JSON ('' none)
-- ARGV[5] queue        the queue both live in (the parent's member value and note name it)
-- ARGV[6] parent_id    the parent's id
-- Returns 1 when created now, 0 when it existed; a job_not_found error when there is no such
-- parent, an invalid_state error when it was cancelled or is done.
if call('EXISTS', K.batch) == 1 then return 0 end
if call('EXISTS', K.parent) == 0 then fail('job_not_found', 'no such batch') end
local b = call('HMGET', K.parent, 'cancelled', 'done_ms')
if b[1] == '1' then fail('invalid_state', 'the batch was cancelled') end
if b[2] then fail('invalid_state', 'the batch is done: every job has its outcome') end
if call('HSETNX', K.parent_jobs, ARGV[1], 'p|' .. ARGV[5]) == 1 then
  call('HINCRBY', K.parent, 'total', 1)
end
local now = now_ms()
call('HSET', K.batch, 'total', 0, 'completed', 0, 'failed', 0, 'created_ms', now,
  'parent_note', ARGV[1] .. '|' .. ARGV[5] .. '|' .. ARGV[6])
if ARGV[2] ~= '' then call('HSET', K.batch, 'description', ARGV[2]) end
if ARGV[3] ~= '' then call('HSET', K.batch, 'on_complete', ARGV[3]) end
if ARGV[4] ~= '' then call('HSET', K.batch, 'on_success', ARGV[4]) end
call('ZADD', K.batches, now, ARGV[1])
return 1
