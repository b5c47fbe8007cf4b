-- batch_cancel: cancel a batch (core/src/batch/), in its slot: no job is counted in any more and
-- no callback falls due (one added already stays). Idempotent.
-- A batch inside a batch (batch_nest.lua) is noted failed for its parent (lib/batch.lua).
-- uses lib/batch.lua
-- KEYS[1] batch        emq:{q}:batch:<id>, HASH
-- KEYS[2] batch_pending ZSET the batch's queue's outcomes on their way (its note for a parent)
-- Returns {'cancelled' (now), 'already', or 'missing' (no such batch); then the note for its
-- parent batch, '' when it has none}.
if call('EXISTS', K.batch) == 0 then return {'missing', ''} end
local r = 'already'
if call('HGET', K.batch, 'cancelled') ~= '1' then
  call('HSET', K.batch, 'cancelled', '1')
  r = 'cancelled'
end
return {r, emq_batch_note_parent(K, now_ms())}
