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
-- KEYS[14] active      ZSET (a parent that runs: it added this child while running)
-- ARGV[1] id           the parent's id
-- ARGV[2] child        "<queue>:<id>" of the child
-- ARGV[3] outcome      "ok" or "failed"
-- ARGV[4] value        the child's result or failure (JSON)
-- ARGV[5] policy       on a failed child: fail (the parent fails), ignore (counts as done), remove
--                      (the dependency is dropped)
-- ARGV[6] max_events   stream cap
-- A parent that is running (it added the child during its run: children_wait.lua ends that run)
-- keeps the outcome for its next run; a failure under the `fail` policy is marked (`fail_child`),
-- so the run's end fails the parent. A child done before its running parent counted it in
-- (child_attach.lua comes after the child's add) leaves its outcome the same way ('early').
-- Returns 'moved', 'waiting', 'parent_failed', 'early', or 'noop' (already counted, or no such
-- parent).
local id, child, outcome, value, policy = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local dep = 'dep:' .. child
local function keep_for_the_run()
  if outcome == 'ok' then
    call('HSET', K.record, 'child:' .. child, value)
  elseif policy ~= 'remove' then
    call('HSET', K.record, 'child_failed:' .. child, value)
    if policy == 'fail' then call('HSET', K.record, 'fail_child', child) end
  end
end
if call('HEXISTS', K.record, dep) == 0 then
  if call('ZSCORE', K.active, id) and call('EXISTS', K.record) == 1
      and call('HEXISTS', K.record, 'child:' .. child) == 0 and call('HEXISTS', K.record, 'child_failed:' .. child) == 0 then
    keep_for_the_run()
    return 'early'
  end
  return 'noop'
end
call('HDEL', K.record, dep)
local pending = call('HINCRBY', K.record, 'pending', -1)
if outcome == 'ok' then
  call('HSET', K.record, 'child:' .. child, value)
elseif policy == 'ignore' then
  call('HSET', K.record, 'child_failed:' .. child, value)
elseif policy == 'fail' then
  if call('ZSCORE', K.active, id) then
    keep_for_the_run()
    return 'waiting'
  end
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
