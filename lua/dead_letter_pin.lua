-- dead_letter_pin: the second step of a dead-letter move (core/src/dead_letter.rs), in the failed
-- job's slot: pin the id its copy takes in the dead-letter queue, once. Idempotent: a later call
-- (a retry of the move after a crash) gets the id the first one pinned, so the copy is added once.
-- KEYS[1] record       emq:{q}:<id>, HASH (the failed job's; `dl_to` names its dead-letter queue)
-- KEYS[2] failed       ZSET
-- KEYS[3] dead_letters ZSET failed jobs on their way to their dead-letter queue
-- ARGV[1] id           the failed job
-- ARGV[2] copy_id      a freshly minted id, used unless one is pinned already
-- Returns {dead-letter queue, copy id}, or {} when the job is no longer on its way (moved already,
-- or it left failed meanwhile: retried or removed; its entry is dropped then).
local id = ARGV[1]
if not call('ZSCORE', K.dead_letters, id) then return {} end
local to = call('HGET', K.record, 'dl_to')
if not call('ZSCORE', K.failed, id) or not to then
  call('ZREM', K.dead_letters, id)
  return {}
end
call('HSETNX', K.record, 'dl_id', ARGV[2])
return {to, call('HGET', K.record, 'dl_id')}
