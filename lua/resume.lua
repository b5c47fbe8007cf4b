-- resume: hand out jobs again; paused jobs move back to wait and a worker is woken.
-- KEYS[1] meta         HASH
-- KEYS[2] wait         LIST
-- KEYS[3] paused       LIST
-- KEYS[4] events       STREAM
-- KEYS[5] marker       LIST
-- ARGV[1] max_events   stream cap
-- Returns 1.
call('HSET', K.meta, 'paused', '0')
if call('EXISTS', K.wait) == 0 then
  if call('EXISTS', K.paused) == 1 then call('RENAME', K.paused, K.wait) end
else
  while call('LMOVE', K.paused, K.wait, 'RIGHT', 'LEFT') do end
end
call('LPUSH', K.marker, '1')
call('XADD', K.events, 'MAXLEN', '~', ARGV[1], '*', 'ev', 'resumed')
return 1
