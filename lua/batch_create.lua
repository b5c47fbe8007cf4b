-- batch_create: create a batch in the slot of the queue that creates it (core/src/batch/): its
-- counters at zero, its description and callbacks, listed in the queue's batches. Idempotent: a
-- second call with the same id changes nothing.
-- KEYS[1] batch        emq:{q}:batch:<id>, HASH
-- KEYS[2] batches      ZSET batch id -> created (server ms)
-- ARGV[1] id           the batch's id (minted by the caller)
-- ARGV[2] description  words for people ('' none)
-- ARGV[3] on_complete  the callback's spec, JSON ('' none)
-- ARGV[4] on_success   the callback's spec, JSON ('' none)
-- Returns 1 when created now, 0 when it existed.
if call('EXISTS', K.batch) == 1 then return 0 end
local now = now_ms()
call('HSET', K.batch, 'total', 0, 'completed', 0, 'failed', 0, 'created_ms', now)
if ARGV[2] ~= '' then call('HSET', K.batch, 'description', ARGV[2]) end
if ARGV[3] ~= '' then call('HSET', K.batch, 'on_complete', ARGV[3]) end
if ARGV[4] ~= '' then call('HSET', K.batch, 'on_success', ARGV[4]) end
call('ZADD', K.batches, now, ARGV[1])
return 1
