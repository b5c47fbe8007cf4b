-- worker_gone: a closing worker leaves the queue's worker registry.
-- KEYS[1] workers       ZSET worker id -> when its registration lapses (server ms)
-- KEYS[2] worker_info   HASH worker id -> its description (JSON)
-- ARGV[1] worker        the worker's id
-- Returns 1 when it was registered, else 0.
local n = call('ZREM', K.workers, ARGV[1])
call('HDEL', K.worker_info, ARGV[1])
return n
