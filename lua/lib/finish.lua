-- finish (library): the two steps that end a leased or stalled job, written once.
-- Used by fail.lua and delay_job.lua (the lease check) and by fail.lua and recover.lua (a failure
-- for good).
-- KEYS: none of its own; each function reads the caller's keys from `k` (k.record, k.logs,
-- k.active, k.leases, k.failed, k.dedup, k.meta, k.metrics, k.events, k.dead_letters,
-- k.batch_pending). ARGV: none of its own. Needs lib/batch_note.lua (its users name it first).

-- Takes the lease of job `id` off the caller: the lease must carry `token` (else a lease_lost
-- error, nothing written); the job leaves active and leases. Returns the lease text.
local function emq_take_lease(k, id, token)
  local lease = call('HGET', k.leases, id)
  if not lease or string.match(lease, '^([^|]*)|') ~= token then
    fail('lease_lost', 'job ' .. id .. ' is not leased with this token any more (it stalled and was recovered, or was removed)')
  end
  call('ZREM', k.active, id)
  call('HDEL', k.leases, id)
  return lease
end

-- The dead-letter queue of the job whose record is k.record: its own `dead_letter` option, else
-- the queue's (`dead_letter` in meta, Queue::set_dead_letter), else nil. Both were checked as
-- queue names by the core before they were stored.
local function emq_dead_letter_of(k)
  local opts = call('HGET', k.record, 'opts')
  if opts and string.find(opts, '"dead_letter"', 1, true) then
    local ok, o = pcall(cjson.decode, opts)
    if ok and type(o) == 'table' and type(o.dead_letter) == 'string' and o.dead_letter ~= '' then
      return o.dead_letter
    end
  end
  local q = call('HGET', k.meta, 'dead_letter')
  if q and q ~= '' then return q end
  return nil
end

-- Ends job `id` as failed for good, at server time `now`: its dedup key freed (if it still names
-- the job), its record kept in failed (`keep`, finished now) or deleted with its logs (counted
-- gone), the failed metric counted and a 'failed' event with the run's `atts` and the failure's
-- `code` and `message` (and the fields in `tag`, the job's group: lib/groups.lua) written. The
-- caller has stored the failure in the record.
-- A job with a dead-letter queue (emq_dead_letter_of) is kept in failed whatever `keep` says,
-- its record naming that queue (`dl_to`), and its id goes in k.dead_letters: the first of the
-- dead-letter move's steps (core/src/dead_letter.rs does the others). Returns true then.
-- A job of a batch has its outcome noted in k.batch_pending (lib/batch_note.lua).
local function emq_fail_for_good(k, id, now, keep, atts, code, message, max_events, tag)
  emq_batch_pending(k, k.record, id, 'f', now)
  local dedup = call('HGET', k.record, 'dedup')
  if dedup and dedup ~= '' and call('HGET', k.dedup, dedup) == id then call('HDEL', k.dedup, dedup) end
  local dlq = emq_dead_letter_of(k)
  if dlq then
    call('HSET', k.record, 'finished_ms', now, 'dl_to', dlq)
    call('ZADD', k.failed, now, id)
    call('ZADD', k.dead_letters, now, id)
  elseif keep then
    call('HSET', k.record, 'finished_ms', now)
    call('ZADD', k.failed, now, id)
  else
    call('DEL', k.record, k.logs)
    call('HINCRBY', k.meta, 'gone', 1)
  end
  call('HINCRBY', k.metrics, 'f:' .. math.floor(now / 60000), 1)
  call('XADD', k.events, 'MAXLEN', '~', max_events, '*', 'ev', 'failed', 'id', id, 'atts', atts,
    'code', code, 'message', message, unpack(tag or {}))
  return dlq ~= nil
end
