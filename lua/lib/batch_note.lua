-- batch_note (library): a batched job's outcome on its way to its batch (core/src/batch/), in
-- the job's slot. Used by complete.lua and lib/finish.lua (whose users name this file first).
-- KEYS: none of its own; the function reads the caller's k.batch_pending. ARGV: none of its own.

-- When the job whose record is `record` belongs to a batch (its record's `batch` field,
-- `<queue>|<batch id>`, written by batch_add.lua; or `batch` in its options: {queue, id}, for a
-- job added in another slot than its batch's), notes its outcome `o` ('c' completed, 'f' failed
-- for good) in k.batch_pending at server time `now`, as `<o>|<id>|<batch queue>|<batch id>`: the
-- first step of recording it in its batch (the worker does the next at once, a maintenance loop
-- after a crash). Returns whether the job belongs to a batch (and its outcome was noted).
local function emq_batch_pending(k, record, id, o, now)
  local r = call('HMGET', record, 'batch', 'opts')
  if r[1] then
    call('ZADD', k.batch_pending, now, o .. '|' .. id .. '|' .. r[1])
    return true
  end
  local opts = r[2]
  if not opts or not string.find(opts, '"batch"', 1, true) then return false end
  local ok, d = pcall(cjson.decode, opts)
  if ok and type(d) == 'table' and type(d.batch) == 'table' and type(d.batch.queue) == 'string'
      and type(d.batch.id) == 'string' then
    call('ZADD', k.batch_pending, now, o .. '|' .. id .. '|' .. d.batch.queue .. '|' .. d.batch.id)
    return true
  end
  return false
end
