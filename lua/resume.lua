-- resume: hand out jobs again; paused jobs move back to wait and a worker is woken.
-- KEYS[1] meta         HASH
-- KEYS[2] wait         LIST
-- KEYS[3] paused       LIST
-- KEYS[4] events       STREAM
-- KEYS[5] marker       LIST
-- ARGV[1] max_events   stream cap
-- Returns 1.
call('HSET', KEYS[1], 'paused', '0')
if call('EXISTS', KEYS[2]) == 0 then
  if call('EXISTS', KEYS[3]) == 1 then call('RENAME', KEYS[3], KEYS[2]) end
else
  while call('LMOVE', KEYS[3], KEYS[2], 'RIGHT', 'LEFT') do end
end
call('LPUSH', KEYS[5], '1')
call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[1], '*', 'ev', 'resumed')
return 1
