-- finish (library): the two steps that end a leased or stalled job, written once.
-- Used by fail.lua and delay_job.lua (the lease check) and by fail.lua and recover.lua (a failure
-- for good).
-- KEYS: none of its own; each function reads the caller's keys from `k` (k.record, k.logs,
-- k.active, k.leases, k.failed, k.dedup, k.meta, k.metrics, k.events). ARGV: none of its own.

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

-- Ends job `id` as failed for good, at server time `now`: its dedup key freed (if it still names
-- the job), its record kept in failed (`keep`, finished now) or deleted with its logs (counted
-- gone), the failed metric counted and a 'failed' event with the run's `atts` and the failure's
-- `code` and `message` (and the fields in `tag`, the job's group: lib/groups.lua) written. The
-- caller has stored the failure in the record.
local function emq_fail_for_good(k, id, now, keep, atts, code, message, max_events, tag)
  local dedup = call('HGET', k.record, 'dedup')
  if dedup and dedup ~= '' and call('HGET', k.dedup, dedup) == id then call('HDEL', k.dedup, dedup) end
  if keep then
    call('HSET', k.record, 'finished_ms', now)
    call('ZADD', k.failed, now, id)
  else
    call('DEL', k.record, k.logs)
    call('HINCRBY', k.meta, 'gone', 1)
  end
  call('HINCRBY', k.metrics, 'f:' .. math.floor(now / 60000), 1)
  call('XADD', k.events, 'MAXLEN', '~', max_events, '*', 'ev', 'failed', 'id', id, 'atts', atts,
    'code', code, 'message', message, unpack(tag or {}))
end
