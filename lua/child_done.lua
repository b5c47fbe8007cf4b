-- child_done: the second, idempotent step of a child's completion or final failure: record it in
-- its parent (in the parent's queue, which may sit in another slot), and when no child is pending
-- move the parent to wait (prioritized, if it has a priority). Safe to repeat (a child already
-- counted is a no-op) and safe if the process died between the child's own step and this one (the
-- child is then re-run and repeats it).
-- uses lib/ready.lua
-- KEYS[1] record       the parent's emq:{q}:<id>, HASH
-- KEYS[2] waiting_children ZSET
-- KEYS[3] wait         LIST
-- KEYS[4] paused       LIST
-- KEYS[5] failed       ZSET
-- KEYS[6] meta         HASH
-- KEYS[7] events       STREAM
-- KEYS[8] marker       LIST
-- KEYS[9] prioritized  ZSET
-- ARGV[1] id           the parent's id
-- ARGV[2] child        "<queue>:<id>" of the child
-- ARGV[3] outcome      "ok" or "failed"
-- ARGV[4] value        the child's result or failure (JSON)
-- ARGV[5] policy       on a failed child: fail (the parent fails), ignore (counts as done), remove
--                      (the dependency is dropped)
-- ARGV[6] max_events   stream cap
-- Returns 'moved', 'waiting', 'parent_failed', or 'noop' (already counted, or no such parent).
local id, child, outcome, value, policy = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local dep = 'dep:' .. child
if call('HEXISTS', KEYS[1], dep) == 0 then return 'noop' end
call('HDEL', KEYS[1], dep)
local pending = call('HINCRBY', KEYS[1], 'pending', -1)
if outcome == 'ok' then
  call('HSET', KEYS[1], 'child:' .. child, value)
elseif policy == 'ignore' then
  call('HSET', KEYS[1], 'child_failed:' .. child, value)
elseif policy == 'fail' then
  if call('ZREM', KEYS[2], id) == 1 then
    local now = now_ms()
    call('HSET', KEYS[1], 'failure', cjson.encode({code = 'child_failed',
      message = 'child ' .. child .. ' failed: ' .. value}), 'finished_ms', now)
    call('ZADD', KEYS[5], now, id)
    call('XADD', KEYS[7], 'MAXLEN', '~', ARGV[6], '*', 'ev', 'failed', 'id', id)
    return 'parent_failed'
  end
  return 'noop'
end
if pending <= 0 and call('ZREM', KEYS[2], id) == 1 then
  local paused = call('HGET', KEYS[6], 'paused') == '1'
  local k = {wait = KEYS[3], paused = KEYS[4], prioritized = KEYS[9], meta = KEYS[6]}
  emq_ready(k, {id}, {call('HGET', KEYS[1], 'priority')}, false, paused)
  if not paused then call('LPUSH', KEYS[8], '1') end
  call('XADD', KEYS[7], 'MAXLEN', '~', ARGV[6], '*', 'ev', 'added', 'id', id)
  return 'moved'
end
return 'waiting'
