-- log: append a line to a job's log, keeping the newest lines.
-- KEYS[1] record       emq:{q}:<id>, HASH
-- KEYS[2] logs         emq:{q}:<id>:logs, LIST
-- ARGV[1] line
-- ARGV[2] keep         most lines kept
-- Returns the number of lines, or 0 when there is no such job.
if call('EXISTS', K.record) == 0 then return 0 end
local n = call('RPUSH', K.logs, ARGV[1])
local keep = tonumber(ARGV[2])
if n > keep then
  call('LTRIM', K.logs, n - keep, -1)
  n = keep
end
return n
