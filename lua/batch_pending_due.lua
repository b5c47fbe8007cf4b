-- batch_pending_due: select the batched outcomes that have waited at least `age_ms` (server time)
-- on their way to their batch, for the maintenance loop to record (core/src/batch/): the worker
-- that finished the job records it at once, so these are the steps a crash interrupted.
-- KEYS[1] batch_pending ZSET <c|f>|<job id>|<batch queue>|<batch id>, by finish time
-- ARGV[1] age_ms       how long an entry has waited at least
-- ARGV[2] limit        most entries returned
-- Returns the entries, oldest first.
return call('ZRANGEBYSCORE', K.batch_pending, '-inf', now_ms() - tonumber(ARGV[1]), 'LIMIT', 0,
  tonumber(ARGV[2]))
