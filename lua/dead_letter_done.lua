-- dead_letter_done: the last step of a dead-letter move (core/src/dead_letter.rs), in the failed
-- job's slot, once its copy is in the dead-letter queue: the job leaves failed and its record and
-- logs are deleted (counted gone), with a 'dead_lettered' event. Idempotent: a second call finds
-- nothing to do.
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] logs         emq:{q}:<id>:logs, LIST
-- KEYS[3] failed       ZSET
-- KEYS[4] dead_letters ZSET failed jobs on their way to their dead-letter queue
-- KEYS[5] meta         HASH
-- KEYS[6] events       STREAM
-- ARGV[1] id           the failed job
-- ARGV[2] copy_id      its copy's id in the dead-letter queue (the one dead_letter_pin.lua pinned)
-- ARGV[3] max_events   stream cap
-- Returns 1 when the job was moved now, 0 when there was nothing left to do.
local id = ARGV[1]
if not call('ZSCORE', K.dead_letters, id) then return 0 end
if call('HGET', K.record, 'dl_id') ~= ARGV[2] then return 0 end
call('ZREM', K.dead_letters, id)
local to = call('HGET', K.record, 'dl_to')
if call('ZREM', K.failed, id) == 1 then
  call('DEL', K.record, K.logs)
  call('HINCRBY', K.meta, 'gone', 1)
end
call('XADD', K.events, 'MAXLEN', '~', ARGV[3], '*', 'ev', 'dead_lettered', 'id', id, 'to', to,
  'copy', ARGV[2])
return 1
