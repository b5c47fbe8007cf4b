-- progress: record a job's progress (JSON) and announce it.
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] events       STREAM
-- ARGV[1] id
-- ARGV[2] progress     JSON text
-- ARGV[3] max_events   stream cap
-- Returns 1, or 0 when there is no such job.
if call('EXISTS', K.record) == 0 then return 0 end
call('HSET', K.record, 'progress', ARGV[2])
call('XADD', K.events, 'MAXLEN', '~', ARGV[3], '*', 'ev', 'progress', 'id', ARGV[1], 'progress', ARGV[2])
return 1
