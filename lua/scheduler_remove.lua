-- scheduler_remove: delete a job scheduler (jobs it already enqueued stay).
-- KEYS[1] schedulers   HASH
-- KEYS[2] due          ZSET
-- ARGV[1] scheduler    the scheduler id
-- Returns 1 when it existed.
call('ZREM', KEYS[2], ARGV[1])
return call('HDEL', KEYS[1], ARGV[1])
