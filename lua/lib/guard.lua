-- guard: the one place a script reaches the datastore, and its only clock.
--
-- Every script calls `call(...)` / `try_call(...)` instead of redis.call / redis.pcall, and `now_ms()`
-- for "now". The loader puts this file in front of each script, after setting EMQ_GUARDED. In guarded
-- mode (on in every test run, an option for users) `call` resolves the key arguments of the command
-- from EMQ_KEYSPEC (generated from COMMAND INFO, see keyspec.lua) and fails the script with an
-- `undeclared_key` error naming any key that is not exactly one of KEYS. Unguarded, `call` is
-- redis.call itself: no cost on the hot path.
-- Of this file (and of every lib/ file) a script gets only the top-level definitions it names,
-- directly or through another one it gets (core/src/script/assemble.rs, `prologue`): a definition is a
-- column-0 `local` line with everything up to the next one, so whatever changes a definition (the
-- guarded `call` below) sits right under it. Unguarded, the `if EMQ_GUARDED then … end` blocks are
-- left out.
-- KEYS: none of its own. ARGV: none of its own.

local function emq_guard_check(argv)
  local declared = {}
  for i = 1, #KEYS do declared[KEYS[i]] = true end
  local name = string.lower(tostring(argv[1]))
  local spec = EMQ_KEYSPEC[name]
  if spec == 'container' then
    name = name .. '|' .. string.lower(tostring(argv[2]))
    spec = EMQ_KEYSPEC[name]
  end
  if spec == nil then
    error({err = 'undeclared_key guard does not know the command ' .. name})
  end
  local positions = {}
  local n = #argv - 1 -- argument positions exclude the command name, as in COMMAND INFO
  local function add(p) if p >= 1 and p <= n then positions[#positions + 1] = p end end
  local resolver = spec[4]
  if resolver == nil then
    local first, last, step = spec[1], spec[2], spec[3]
    if first > 0 then
      if last < 0 then last = n + 1 + last end
      for p = first, last, step do add(p) end
    end
  elseif resolver == 'numkeys1' or resolver == 'numkeys2' then
    -- numkeys at argument 1 (ZUNION, LMPOP, …) or 2 (BLMPOP, BZMPOP); keys follow it
    local at = (resolver == 'numkeys1') and 1 or 2
    local count = tonumber(argv[at + 1]) or 0
    for p = at + 1, at + count do add(p) end
  elseif resolver == 'dest_numkeys' then
    -- ZUNIONSTORE dest numkeys key…
    add(1)
    local count = tonumber(argv[3]) or 0
    for p = 3, 2 + count do add(p) end
  elseif resolver == 'streams' then
    -- XREAD … STREAMS k1 k2 id1 id2
    for p = 1, n do
      if string.upper(tostring(argv[p + 1])) == 'STREAMS' then
        local count = math.floor((n - p) / 2)
        for q = p + 1, p + count do add(q) end
        break
      end
    end
  elseif resolver == 'store' then
    -- SORT key … STORE dest; GEORADIUS key … STORE|STOREDIST dest
    add(1)
    for p = 2, n - 1 do
      local word = string.upper(tostring(argv[p + 1]))
      if word == 'STORE' or word == 'STOREDIST' then add(p + 1) end
    end
  else
    error({err = 'undeclared_key guard cannot resolve the keys of ' .. name})
  end
  for _, p in ipairs(positions) do
    local key = argv[p + 1]
    if not declared[key] then
      error({err = 'undeclared_key ' .. tostring(key) .. ' (argument ' .. p .. ' of ' .. name ..
        ') is not in KEYS; declare every key a script touches'})
    end
  end
end

local call = redis.call
if EMQ_GUARDED then
  call = function(...)
    emq_guard_check({...})
    return redis.call(...)
  end
end
local try_call = redis.pcall
if EMQ_GUARDED then
  try_call = function(...)
    emq_guard_check({...})
    return redis.pcall(...)
  end
end

-- The server's clock: the only "now" a script may use. now_us() gives microseconds (lease tokens),
-- now_ms() milliseconds (every stored instant).
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function now_ms()
  return math.floor(now_us() / 1000)
end
-- The same clock as text, for a stamp a script only stores: milliseconds made from TIME's digits
-- (a number would be formatted with snprintf on its way into a command, which costs the server
-- more than the command), and the TIME reply itself, {seconds, microseconds}, for a script that
-- needs the numbers later.
-- (TIME's microseconds have six digits nine times in ten: padded only when they are fewer.)
local function now_ms_text()
  local t = redis.call('TIME')
  local us = t[2]
  if #us == 6 then return t[1] .. string.sub(us, 1, 3), t end
  return t[1] .. string.sub('00000' .. us, -6, -4), t
end
-- TIME's reply (now_ms_text's second value) as microseconds in text: now_clock's first value, for
-- a script that read the clock as text and finds it needs a lease token after all.
local function us_text_of(t)
  local us = t[2]
  if #us == 6 then return t[1] .. us end
  return t[1] .. string.sub('00000' .. us, -6)
end
-- The clock once, in the three forms a lease needs: microseconds as text (a lease token's
-- prefix: exact, where a number of 16 digits would be printed with 14), milliseconds as text
-- (a stamp stored as is) and milliseconds as a number (arithmetic). Made from TIME's digits, so
-- no number is formatted on the way.
local function now_clock()
  local t = redis.call('TIME')
  local us6 = t[2]
  if #us6 < 6 then us6 = string.sub('00000' .. us6, -6) end
  local ms_text = t[1] .. string.sub(us6, 1, 3)
  return t[1] .. us6, ms_text, tonumber(ms_text)
end

-- Raises a coded error (`<code> <message>`), which the core maps to its error enum.
local function fail(code, message)
  error({err = code .. ' ' .. message})
end
