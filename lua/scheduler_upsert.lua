-- scheduler_upsert: create or replace a job scheduler (every N ms, or a cron expression read by the
-- client). A replaced scheduler keeps its count, and its next due time when it repeats the same way.
-- KEYS[1] schedulers   HASH scheduler id (user data) -> spec (JSON)
-- KEYS[2] schedule_due ZSET scheduler id -> next due (server ms)
-- ARGV[1] scheduler    the scheduler id
-- ARGV[2] spec         JSON {name, data, opts, attempts, every_ms, limit, count, rev[, cron, tz, group]}
-- ARGV[3] first_ms     delay of the start from now
-- ARGV[4] end_ms       stop this long after now (0: never)
-- Returns 1 when created, 0 when replaced.
local now = now_ms()
local raw = call('HGET', K.schedulers, ARGV[1])
local spec = cjson.decode(ARGV[2])
local start = now + tonumber(ARGV[3])
if tonumber(ARGV[4]) > 0 then spec.end_ms = now + tonumber(ARGV[4]) end
local keep = false
if raw then
  local old = cjson.decode(raw)
  spec.count = old.count or 0
  spec.rev = (old.rev or 0) + 1
  keep = old.every_ms == spec.every_ms and old.cron == spec.cron and old.tz == spec.tz
  if keep and old.primed then spec.primed = true end
end
-- A cron scheduler starts unprimed: its first fire step moves the due time from the start to the
-- first occurrence (computed by the firing client from the stored instant).
if spec.cron and not spec.primed then spec.primed = false end
call('HSET', K.schedulers, ARGV[1], cjson.encode(spec))
if keep then
  call('ZADD', K.schedule_due, 'NX', start, ARGV[1])
else
  call('ZADD', K.schedule_due, start, ARGV[1])
end
return raw and 0 or 1
