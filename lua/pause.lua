-- pause: stop handing out jobs; waiting jobs move to paused (oldest stays oldest).
-- KEYS[1] meta         HASH
-- KEYS[2] wait         LIST
-- KEYS[3] paused       LIST
-- KEYS[4] events       STREAM
-- ARGV[1] max_events   stream cap
-- Returns 1.
call('HSET', KEYS[1], 'paused', '1')
if call('EXISTS', KEYS[3]) == 0 then
  if call('EXISTS', KEYS[2]) == 1 then call('RENAME', KEYS[2], KEYS[3]) end
else
  while call('LMOVE', KEYS[2], KEYS[3], 'LEFT', 'RIGHT') do end
end
call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[1], '*', 'ev', 'paused')
return 1
