-- started: a worker reports that the runs of jobs it had leased ahead (lease "<token>|<ms>|a",
-- see lib/claim.lua) have started: each such lease becomes "<token>|<now>", so from now on a
-- stall of the job is charged (a stall and an attempt) instead of being given back uncounted.
-- KEYS[1] active       ZSET id -> lease expiry
-- KEYS[2] leases       HASH id -> "<token>|<start ms>" or "<token>|<start ms>|a"
-- ARGV[1..] job        id, token pairs
-- Returns the ids whose lease is not this worker's any more (token changed, or not active).
if #ARGV == 0 then return {} end
local now_text = now_ms_text()
local ids, tokens = {}, {}
for i = 1, #ARGV, 2 do
  ids[#ids + 1] = ARGV[i]
  tokens[#tokens + 1] = ARGV[i + 1]
end
-- One read of the leases and one of active for all of them, one write.
local leases = call('HMGET', K.leases, unpack(ids))
local scores = call('ZMSCORE', K.active, unpack(ids))
local lost, marks = {}, {}
for i = 1, #ids do
  local lease = leases[i]
  local token = tokens[i]
  -- "<token>|…", by a plain find and a byte compare (no pattern).
  if lease and string.byte(lease, #token + 1) == 124 and string.find(lease, token, 1, true) == 1
      and scores[i] then
    if string.sub(lease, -2) == '|a' then
      marks[#marks + 1] = ids[i]
      marks[#marks + 1] = tokens[i] .. '|' .. now_text
    end
  else
    lost[#lost + 1] = ids[i]
  end
end
if #marks > 0 then call('HSET', K.leases, unpack(marks)) end
return lost
