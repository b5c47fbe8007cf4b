-- change_priority: give a job that has not finished a new priority (0: none). A ready job moves at
-- once: in prioritized it keeps its order number, so among the jobs of its new priority it ranks by
-- when it was added; from wait (or paused) it goes to the back of its priority; with the priority
-- dropped, from prioritized to the back of wait. A delayed job takes it when due; an active or
-- stalled job, or a parent waiting for its children, when it is next ready.
-- uses lib/groups.lua
-- uses lib/ready.lua
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] wait         LIST
-- KEYS[3] paused       LIST
-- KEYS[4] prioritized  ZSET
-- KEYS[5] delayed      ZSET
-- KEYS[6] delayed_priority HASH id -> priority, for delayed jobs that have one
-- KEYS[7] meta         HASH
-- KEYS[8] marker       LIST
-- KEYS[9] events       STREAM
-- KEYS[10] groups       HASH grouped job id -> its group (lib/groups.lua)
-- KEYS[11] group_ready ZSET the grouped jobs ready to run
-- KEYS[12] group_turns ZSET group -> pass, the groups that may run
-- KEYS[13] group_parked ZSET group -> pass, ready groups paused or at their cap
-- ARGV[1] id
-- ARGV[2] priority     0 none, lower first
-- ARGV[3] max_events   stream cap
-- Returns 1, or 0 when there is no such job or it has finished (completed or failed).
local id, priority = ARGV[1], tonumber(ARGV[2])
if call('EXISTS', K.record) == 0 or call('HEXISTS', K.record, 'finished_ms') == 1 then return 0 end
if priority > 0 then call('HSET', K.record, 'priority', priority) else call('HDEL', K.record, 'priority') end
local paused = call('HGET', K.meta, 'paused') == '1'
local moved = false
local score = call('ZSCORE', K.prioritized, id)
local g, member = emq_group_of(call('HGET', K.groups, id) or '')
if member then
  -- Waiting in its group: to the back of its new priority there.
  call('ZREM', K.group_ready, member)
  emq_group_ready(K, id, g, priority, false)
  moved = true
elseif score then
  call('ZREM', K.prioritized, id)
  if priority > 0 then
    call('ZADD', K.prioritized, priority * EMQ_PRIORITY_SPAN + tonumber(score) % EMQ_PRIORITY_SPAN, id)
  else
    emq_ready(K, {id}, {0}, false, paused)
  end
  moved = true
elseif call('ZSCORE', K.delayed, id) then
  if priority > 0 then call('HSET', K.delayed_priority, id, priority) else call('HDEL', K.delayed_priority, id) end
elseif priority > 0 and call('LREM', K.wait, -1, id) + call('LREM', K.paused, -1, id) > 0 then
  emq_ready(K, {id}, {priority}, false, paused)
  moved = true
end
if moved and not paused then call('LPUSH', K.marker, '1') end
call('XADD', K.events, 'MAXLEN', '~', ARGV[3], '*', 'ev', 'priority', 'id', id, 'priority', priority, unpack(emq_group_tag(K, id)))
return 1
