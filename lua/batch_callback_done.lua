-- batch_callback_done: the last step of a batch's callback (core/src/batch/), in the batch's
-- slot, once its job was added under the pinned id: it is not due again. Idempotent.
-- KEYS[1] batch        emq:{q}:batch:<id>, HASH
-- ARGV[1] kind         'complete' or 'success'
-- ARGV[2] id           the callback job's id (the one pinned)
-- Returns 1 when marked now, 0 otherwise.
if call('HGET', K.batch, ARGV[1] .. '_id') ~= ARGV[2] then return 0 end
if call('HGET', K.batch, ARGV[1] .. '_added') == '1' then return 0 end
call('HSET', K.batch, ARGV[1] .. '_added', '1')
return 1
