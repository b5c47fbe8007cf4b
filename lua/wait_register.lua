-- wait_register: a worker says it is about to block on the marker, so an add may hand it a job
-- (add.lua, `handoff`). Sent in one pipeline with the worker's BRPOP, on its blocking connection.
-- KEYS[1] waiters      ZSET "<worker>|<lease_ms>" -> when its wait ends (server ms)
-- ARGV[1] worker       "<worker id>|<lease_ms>" (the lease an add gives a job it hands over)
-- ARGV[2] wait_ms      how long the worker's blocking wait lasts
-- Returns 1.
local now = now_ms()
call('ZREMRANGEBYSCORE', K.waiters, '-inf', now)
call('ZADD', K.waiters, now + tonumber(ARGV[2]), ARGV[1])
return 1
