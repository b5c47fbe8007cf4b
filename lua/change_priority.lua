-- change_priority: give a job that has not finished a new priority (0: none). A ready job moves at
-- once: in prioritized it keeps its order number, so among the jobs of its new priority it ranks by
-- when it was added; from wait (or paused) it goes to the back of its priority; with the priority
-- dropped, from prioritized to the back of wait. A delayed job takes it when due; an active or
-- stalled job, or a parent waiting for its children, when it is next ready.
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
-- ARGV[1] id
-- ARGV[2] priority     0 none, lower first
-- ARGV[3] max_events   stream cap
-- Returns 1, or 0 when there is no such job or it has finished (completed or failed).
local id, priority = ARGV[1], tonumber(ARGV[2])
if call('EXISTS', KEYS[1]) == 0 or call('HEXISTS', KEYS[1], 'finished_ms') == 1 then return 0 end
if priority > 0 then call('HSET', KEYS[1], 'priority', priority) else call('HDEL', KEYS[1], 'priority') end
local paused = call('HGET', KEYS[7], 'paused') == '1'
local k = {wait = KEYS[2], paused = KEYS[3], prioritized = KEYS[4], meta = KEYS[7]}
local moved = false
local score = call('ZSCORE', KEYS[4], id)
if score then
  call('ZREM', KEYS[4], id)
  if priority > 0 then
    call('ZADD', KEYS[4], priority * EMQ_PRIORITY_SPAN + tonumber(score) % EMQ_PRIORITY_SPAN, id)
  else
    emq_ready(k, {id}, {0}, false, paused)
  end
  moved = true
elseif call('ZSCORE', KEYS[5], id) then
  if priority > 0 then call('HSET', KEYS[6], id, priority) else call('HDEL', KEYS[6], id) end
elseif priority > 0 and call('LREM', KEYS[2], -1, id) + call('LREM', KEYS[3], -1, id) > 0 then
  emq_ready(k, {id}, {priority}, false, paused)
  moved = true
end
if moved and not paused then call('LPUSH', KEYS[8], '1') end
call('XADD', KEYS[9], 'MAXLEN', '~', ARGV[3], '*', 'ev', 'priority', 'id', id, 'priority', priority)
return 1
