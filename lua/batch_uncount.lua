-- batch_uncount: the last step of adding jobs to a batch in another slot (core/src/batch/), in
-- the batch's slot: jobs counted in by batch_count.lua whose ids turned out to belong to jobs
-- outside the batch (the add found a job under the id, and its record names no batch or another
-- one) are counted out again, so that they do not hold the batch open for ever. Only an entry
-- still pending for that queue is counted out; one counted out already, or absent, is left as it
-- is, so a repeated call changes nothing. A sealed batch that this leaves with every job's outcome
-- is done: its callbacks fall due, as batch_seal.lua's do.
-- uses lib/batch.lua
-- KEYS[1] batch        emq:{q}:batch:<id>, HASH
-- KEYS[2] batch_jobs   HASH job id -> <state>|<queue>
-- KEYS[3] batch_pending ZSET the batch's queue's outcomes on their way (its note for a parent)
-- ARGV[1] queue        the jobs' queue (their entries name it)
-- ARGV[2] complete_id  a freshly minted id for the on_complete job, used unless one is pinned
-- ARGV[3] success_id   a freshly minted id for the on_success job, used unless one is pinned
-- ARGV[4..] id         the ids to count out
-- Returns {how many were counted out now, the note for its parent batch when it has one and is
-- done ('' otherwise), then the due callbacks (lib/batch.lua emq_batch_due)}; a job_not_found
-- error when there is no such batch.
if call('EXISTS', K.batch) == 0 then fail('job_not_found', 'no such batch') end
local entry = 'p|' .. ARGV[1]
local ids = {}
for i = 4, #ARGV do ids[#ids + 1] = ARGV[i] end
local gone = {}
if #ids > 0 then
  local have = call('HMGET', K.batch_jobs, unpack(ids))
  for i = 1, #ids do
    if have[i] == entry then gone[#gone + 1] = ids[i] end
  end
end
if #gone > 0 then
  call('HDEL', K.batch_jobs, unpack(gone))
  call('HINCRBY', K.batch, 'total', -#gone)
end
local now = now_ms()
local out = {tostring(#gone), emq_batch_note_parent(K, now)}
for _, v in ipairs(emq_batch_due(K, ARGV[2], ARGV[3], now)) do out[#out + 1] = v end
return out
