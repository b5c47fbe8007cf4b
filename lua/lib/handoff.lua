-- handoff (library): the one Lua definition of a hand-off entry (see core/src/handoff.rs, which
-- parses it in the worker): netstrings ("<len>:<bytes>") of the job id, the lease token, then the
-- record's field/value pairs. Used by add.lua (builds), lib/claim.lua, sweep.lua, remove_job.lua.
-- KEYS: none of its own. ARGV: none of its own.

-- The entry for job `id` under lease `token`, with its record `fields` (a flat field/value list).
local function emq_handoff_entry(id, token, fields)
  local parts = {#id .. ':' .. id, #token .. ':' .. token}
  for i = 1, #fields do
    local v = tostring(fields[i])
    parts[#parts + 1] = #v .. ':' .. v
  end
  return table.concat(parts)
end

-- The job id an entry names.
local function emq_handoff_id(entry)
  local len, rest = string.match(entry, '^(%d+):(.*)$')
  return string.sub(rest, 1, tonumber(len))
end
