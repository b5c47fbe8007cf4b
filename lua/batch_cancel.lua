-- batch_cancel: cancel a batch (core/src/batch/), in its slot: no job is counted in any more and
-- no callback falls due (one added already stays). Idempotent.
-- KEYS[1] batch        emq:{q}:batch:<id>, HASH
-- Returns 'cancelled' (now), 'already', or 'missing' (no such batch).
if call('EXISTS', K.batch) == 0 then return 'missing' end
if call('HGET', K.batch, 'cancelled') == '1' then return 'already' end
call('HSET', K.batch, 'cancelled', '1')
return 'cancelled'
