-- child_done: the second, idempotent step of a child's completion or final failure: record it in
-- its parent (in the parent's queue, which may sit in another slot), and when no child is pending
-- move the parent to wait (prioritized, if it has a priority). Safe to repeat (a child already
-- counted is a no-op) and safe if the process died between the child's own step and this one (the
-- child is then re-run and repeats it).
-- uses lib/groups.lua
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
-- KEYS[10] groups       HASH grouped job id -> its group (lib/groups.lua)
-- KEYS[11] group_ready ZSET the grouped jobs ready to run
-- KEYS[12] group_turns ZSET group -> pass, the groups that may run
-- KEYS[13] group_parked ZSET group -> pass, ready groups paused or at their cap
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
if call('HEXISTS', K.record, dep) == 0 then return 'noop' end
call('HDEL', K.record, dep)
local pending = call('HINCRBY', K.record, 'pending', -1)
if outcome == 'ok' then
  call('HSET', K.record, 'child:' .. child, value)
elseif policy == 'ignore' then
  call('HSET', K.record, 'child_failed:' .. child, value)
elseif policy == 'fail' then
  if call('ZREM', K.waiting_children, id) == 1 then
    local now = now_ms()
    call('HSET', K.record, 'failure', cjson.encode({code = 'child_failed',
      message = 'child ' .. child .. ' failed: ' .. value}), 'finished_ms', now)
    call('ZADD', K.failed, now, id)
    call('XADD', K.events, 'MAXLEN', '~', ARGV[6], '*', 'ev', 'failed', 'id', id)
    return 'parent_failed'
  end
  return 'noop'
end
if pending <= 0 and call('ZREM', K.waiting_children, id) == 1 then
  local paused = call('HGET', K.meta, 'paused') == '1'
  emq_ready(K, {id}, {call('HGET', K.record, 'priority')}, false, paused)
  if not paused then call('LPUSH', K.marker, '1') end
  call('XADD', K.events, 'MAXLEN', '~', ARGV[6], '*', 'ev', 'added', 'id', id, unpack(emq_group_tag(K, id)))
  return 'moved'
end
return 'waiting'
