-- add_parent: add a flow's parent job, waiting for its children (whose ids were minted before).
-- Its pending children are fields of its own record (`dep:<queue>:<id>`, and `pending` counts them),
-- so they go wherever the record goes. Idempotent: a retried add of an existing parent is a no-op.
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] waiting_children ZSET id -> added time
-- KEYS[3] meta         HASH
-- KEYS[4] events       STREAM
-- ARGV[1] id
-- ARGV[2] name
-- ARGV[3] data         JSON
-- ARGV[4] opts         JSON, non-default options only
-- ARGV[5] attempts     most attempts
-- ARGV[6] parent       "" or "<queue>:<id>" of this job's own parent (nested flows)
-- ARGV[7] priority     0 none, lower first (it counts once the children are done)
-- ARGV[8] max_events   stream cap
-- ARGV[9..] child      "<queue>:<id>" of each child
-- Returns 1 when added, 0 when it existed.
if call('EXISTS', K.record) == 1 then return 0 end
local now = now_ms()
local fields = {'name', ARGV[2], 'data', ARGV[3], 'created_ms', now, 'pending', #ARGV - 8}
if ARGV[4] ~= '{}' then fields[#fields + 1] = 'opts'; fields[#fields + 1] = ARGV[4] end
if ARGV[5] ~= '1' then fields[#fields + 1] = 'attempts'; fields[#fields + 1] = ARGV[5] end
if ARGV[6] ~= '' then fields[#fields + 1] = 'parent'; fields[#fields + 1] = ARGV[6] end
if tonumber(ARGV[7]) > 0 then fields[#fields + 1] = 'priority'; fields[#fields + 1] = ARGV[7] end
for i = 9, #ARGV do
  local child = ARGV[i]
  fields[#fields + 1] = 'dep:' .. child
  fields[#fields + 1] = '1'
end
call('HSET', K.record, unpack(fields))
call('ZADD', K.waiting_children, now, ARGV[1])
call('HINCRBY', K.meta, 'added', 1)
call('XADD', K.events, 'MAXLEN', '~', ARGV[8], '*', 'ev', 'waiting-children', 'id', ARGV[1])
return 1
