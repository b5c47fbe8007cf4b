-- migrate_finished: `emq migrate` inserts one finished job (failed or completed) copied from a
-- BullMQ or v1 queue, and marks its source migrated, in one step; a no-op when its record exists or
-- the source is already marked. (Waiting, delayed and prioritized copies go through add.lua.)
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] finished=completed|failed ZSET id -> finish time
-- KEYS[3] meta         HASH (its `added` counter)
-- KEYS[4] migrated     HASH source job key (data) -> "<id>" (minted) or "<id>|<state>" (copied)
-- ARGV[1] id
-- ARGV[2] source       the source job's key, `<prefix>:<queue>:<source id>` (data, never a key)
-- ARGV[3] state        "completed" or "failed"
-- ARGV[4] name
-- ARGV[5] data         JSON
-- ARGV[6] opts         JSON, non-default options only ("{}" for none)
-- ARGV[7] attempts
-- ARGV[8] atts         attempts made
-- ARGV[9] outcome      JSON: the failure {code, message, stack}, or the result
-- ARGV[10] age_ms      how long before the server's now the source job finished
-- ARGV[11] run_ms      how long its last run took (processed to finished), -1 unknown
-- ARGV[12] created_age_ms how long before the server's now the source job was created
-- Returns 1 when inserted, 0 when it was there already.
local id = ARGV[1]
local mark = call('HGET', K.migrated, ARGV[2])
if mark and string.find(mark, '|', 1, true) then return 0 end
if call('EXISTS', K.record) == 1 then return 0 end
local now = now_ms()
local finished = now - tonumber(ARGV[10])
local fields = {'name', ARGV[4], 'data', ARGV[5], 'created_ms', now - tonumber(ARGV[12]),
  'atts', ARGV[8], 'finished_ms', finished}
if ARGV[6] ~= '{}' then fields[#fields + 1] = 'opts'; fields[#fields + 1] = ARGV[6] end
if tonumber(ARGV[7]) ~= 1 then fields[#fields + 1] = 'attempts'; fields[#fields + 1] = ARGV[7] end
if tonumber(ARGV[11]) >= 0 then
  fields[#fields + 1] = 'processed_ms'; fields[#fields + 1] = finished - tonumber(ARGV[11])
end
fields[#fields + 1] = ARGV[3] == 'failed' and 'failure' or 'result'
fields[#fields + 1] = ARGV[9]
call('HSET', K.record, unpack(fields))
call('ZADD', K.finished, finished, id)
call('HINCRBY', K.meta, 'added', 1)
call('HSET', K.migrated, ARGV[2], id .. '|' .. ARGV[3], '=' .. id, ARGV[2])
return 1
