-- batch_record: record batched jobs' outcomes in their batch (core/src/batch/), in the batch's
-- slot, after each job's finish script noted it in its own queue's batch-pending set. Once per job
-- and outcome: pending -> completed or failed, failed -> completed (a failed job retried to
-- success); anything else changes nothing. The pairs are taken in order, so a job named twice (its
-- failure, then its success after a retry) moves twice. Then returns the callbacks due.
-- uses lib/batch.lua
-- KEYS[1] batch        emq:{q}:batch:<id>, HASH
-- KEYS[2] batch_jobs   HASH job id -> <state>|<queue>
-- KEYS[3] batch_failed ZSET <queue>:<job id> -> failed (server ms)
-- KEYS[4] batch_pending ZSET the batch's queue's outcomes on their way (its note for a parent)
-- ARGV[1] complete_id  a freshly minted id for the on_complete job, used unless one is pinned
-- ARGV[2] success_id   a freshly minted id for the on_success job, used unless one is pinned
-- ARGV[3..] outcome    pairs: the batched job's id, then 'c' completed or 'f' failed for good
-- Returns {how many outcomes were counted now, the note for its parent batch when it has one and
-- is done ('' otherwise: lib/batch.lua emq_batch_note_parent), then the due callbacks
-- (emq_batch_due)}.
-- Costs (bench/RESULTS.md "Batches"): one call per batch for all the outcomes a worker's
-- completion call had, one read of their entries, one write of them and one count per kind.
if call('EXISTS', K.batch) == 0 then return {0} end
local n = (#ARGV - 2) / 2
local ids = {}
for i = 1, n do ids[i] = ARGV[1 + i * 2] end
local entries = n > 0 and call('HMGET', K.batch_jobs, unpack(ids)) or {}
local now = now_ms()
local counted, dc, df = 0, 0, 0
local set, moved = {}, {}
for i = 1, n do
  local id, o = ids[i], ARGV[2 + i * 2]
  local cur = moved[id] or entries[i]
  if cur then
    local state, queue = string.sub(cur, 1, 1), string.sub(cur, 3)
    if state == 'p' or (state == 'f' and o == 'c') then
      local now_entry = o .. '|' .. queue
      moved[id] = now_entry
      set[#set + 1] = id
      set[#set + 1] = now_entry
      if state == 'f' then
        df = df - 1
        call('ZREM', K.batch_failed, queue .. ':' .. id)
      end
      if o == 'c' then
        dc = dc + 1
      else
        df = df + 1
        call('ZADD', K.batch_failed, now, queue .. ':' .. id)
      end
      counted = counted + 1
    end
  end
end
if #set > 0 then call('HSET', K.batch_jobs, unpack(set)) end
if dc ~= 0 then call('HINCRBY', K.batch, 'completed', dc) end
if df ~= 0 then call('HINCRBY', K.batch, 'failed', df) end
local out = {counted, emq_batch_note_parent(K, now)}
for _, v in ipairs(emq_batch_due(K, ARGV[1], ARGV[2], now)) do out[#out + 1] = v end
return out
