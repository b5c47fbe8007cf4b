-- pause: stop handing out jobs; waiting jobs move to paused (oldest stays oldest).
-- KEYS[1] meta         HASH
-- KEYS[2] wait         LIST
-- KEYS[3] paused       LIST
-- KEYS[4] events       STREAM
-- ARGV[1] max_events   stream cap
-- Returns 1.
call('HSET', K.meta, 'paused', '1')
if call('EXISTS', K.paused) == 0 then
  if call('EXISTS', K.wait) == 1 then call('RENAME', K.wait, K.paused) end
else
  while call('LMOVE', K.wait, K.paused, 'LEFT', 'RIGHT') do end
end
call('XADD', K.events, 'MAXLEN', '~', ARGV[1], '*', 'ev', 'paused')
return 1
