-- claim: lease up to `count` ready jobs to a worker (the select half of select-then-claim; the
-- worker then reads each job's record with a plain HMGET of that job's key).
-- uses lib/handoff.lua
-- uses lib/ready.lua
-- uses lib/claim.lua
-- KEYS[1] wait         LIST
-- KEYS[2] paused       LIST
-- KEYS[3] delayed      ZSET
-- KEYS[4] prioritized  ZSET
-- KEYS[5] active       ZSET id -> lease expiry
-- KEYS[6] leases       HASH id -> "<token>|<start ms>"
-- KEYS[7] meta         HASH
-- KEYS[8] events       STREAM
-- KEYS[9] marker       LIST
-- KEYS[10] limiter     STRING rate-limit counter
-- KEYS[11] groups      HASH job id -> group key, for the per-group rate limit
-- KEYS[12] group_counts HASH group key -> jobs started in its window
-- KEYS[13] group_windows ZSET group key -> end of its window (server ms)
-- KEYS[14] handoff     LIST entries an add handed to blocked workers, not taken yet
-- KEYS[15] delayed_priority HASH id -> priority, for delayed jobs that have one
-- ARGV[1] count        jobs wanted
-- ARGV[2] lease_ms     lease length
-- ARGV[3] max_events   stream cap
-- ARGV[4] start        how many of the jobs start at once (the rest are leased ahead, lib/claim.lua)
-- Returns {next due in ms or -1, id, token, id, token, …}.
local us_text, now_text, now = now_clock()
return emq_claim(K, us_text, now_text, now, tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], true, 0,
  tonumber(ARGV[4]))
