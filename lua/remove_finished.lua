-- remove_finished: delete a batch of completed or failed jobs (retention and clean), each only if it
-- is still in that container and, with older_ms, finished at least that long ago.
-- KEYS[1] finished=completed|failed the completed or failed ZSET (id -> finish time)
-- KEYS[2] meta         HASH
-- KEYS[3] events       STREAM
-- KEYS[4..] job=record+logs  record emq:{q}:<id> and logs emq:{q}:<id>:logs, a pair per id below
-- ARGV[1] max_events   stream cap
-- ARGV[2] older_ms     0, or only jobs finished at least this long ago
-- ARGV[3..] id         the job ids, in the order of the key pairs
-- Returns the number of jobs removed.
local older = tonumber(ARGV[2])
local cutoff = older > 0 and (now_ms() - older) or nil
local ids, keys = {}, {}
for j = 3, #ARGV do
  local id = ARGV[j]
  local score = call('ZSCORE', K.finished, id)
  if score and (cutoff == nil or tonumber(score) <= cutoff) then
    ids[#ids + 1] = id
    keys[#keys + 1] = KEYS[4 + (j - 3) * 2]
    keys[#keys + 1] = KEYS[5 + (j - 3) * 2]
  end
end
if #ids == 0 then return 0 end
call('ZREM', K.finished, unpack(ids))
call('DEL', unpack(keys))
call('HINCRBY', K.meta, 'gone', #ids)
call('XADD', K.events, 'MAXLEN', '~', ARGV[1], '*', 'ev', 'removed', 'ids', table.concat(ids, ' '))
return #ids
