-- scheduler_remove: delete a job scheduler (jobs it already enqueued stay).
-- KEYS[1] schedulers   HASH
-- KEYS[2] schedule_due ZSET
-- ARGV[1] scheduler    the scheduler id
-- Returns 1 when it existed.
call('ZREM', K.schedule_due, ARGV[1])
return call('HDEL', K.schedulers, ARGV[1])
