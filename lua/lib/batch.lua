-- batch (library): the callbacks of a batch that fall due (core/src/batch/), in the batch's
-- slot, and the note a batch inside a batch leaves for its parent. Used by batch_record.lua,
-- batch_seal.lua and batch_cancel.lua.
-- KEYS: none of its own; the functions read the caller's k.batch (and k.batch_pending). ARGV: none
-- of its own.

-- The callbacks of the batch k.batch due now and not yet added: a sealed, uncancelled batch whose
-- every job has an outcome is due `complete` (its on_complete, if any), and `success` (on_success)
-- when every job completed. A callback's id is pinned on first due (`complete_id`, from the
-- caller's freshly minted `complete_id`; `success_id` likewise) with the counts of that moment,
-- so a repeated call returns the same id and counts until batch_callback_done.lua marks it added.
-- Returns a flat list: kind, id, spec, total, completed, failed, per due callback.
local function emq_batch_due(k, complete_id, success_id, now)
  local b = call('HMGET', k.batch, 'total', 'completed', 'failed', 'sealed', 'cancelled')
  local out = {}
  if b[4] ~= '1' or b[5] == '1' then return out end
  local total, completed, failed = tonumber(b[1] or '0'), tonumber(b[2] or '0'), tonumber(b[3] or '0')
  if completed + failed < total then return out end
  call('HSETNX', k.batch, 'done_ms', now)
  for _, c in ipairs({{'complete', complete_id, true}, {'success', success_id, completed == total}}) do
    local kind, fresh, due = c[1], c[2], c[3]
    local spec = call('HGET', k.batch, 'on_' .. kind)
    if due and spec then
      if call('HSETNX', k.batch, kind .. '_id', fresh) == 1 then
        call('HSET', k.batch, kind .. '_counts', total .. ' ' .. completed .. ' ' .. failed)
      end
      if call('HGET', k.batch, kind .. '_added') ~= '1' then
        local id = call('HGET', k.batch, kind .. '_id')
        local n = {}
        for w in string.gmatch(call('HGET', k.batch, kind .. '_counts'), '%d+') do n[#n + 1] = w end
        out[#out + 1] = kind
        out[#out + 1] = id
        out[#out + 1] = spec
        out[#out + 1] = n[1]
        out[#out + 1] = n[2]
        out[#out + 1] = n[3]
      end
    end
  end
  return out
end

-- The note a child batch (batch_nest.lua) leaves for its parent once it is done, in
-- k.batch_pending (the child's queue's; read as a job's outcome is: core/src/batch/steps.rs
-- settle): 'c' when every job of it completed, 'f' when one failed for good or it was cancelled;
-- once per outcome (`parent_noted`), so 'f' then 'c' when its failed jobs are retried to success.
-- Returns the note while it waits in k.batch_pending, else ''.
local function emq_batch_note_parent(k, now)
  local b = call('HMGET', k.batch, 'total', 'completed', 'failed', 'sealed', 'cancelled',
    'parent_note', 'parent_noted')
  local note, noted = b[6], b[7]
  if not note then return '' end
  local total, completed, failed = tonumber(b[1] or '0'), tonumber(b[2] or '0'), tonumber(b[3] or '0')
  local o
  if b[5] == '1' then
    o = 'f'
  elseif b[4] == '1' and completed + failed >= total then
    o = (completed == total) and 'c' or 'f'
  end
  if o and (not noted or (noted == 'f' and o == 'c')) then
    call('HSET', k.batch, 'parent_noted', o)
    call('ZADD', k.batch_pending, now, o .. '|' .. note)
    return o .. '|' .. note
  end
  if noted and call('ZSCORE', k.batch_pending, noted .. '|' .. note) then
    return noted .. '|' .. note
  end
  return ''
end
