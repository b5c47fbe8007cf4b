-- child_attach: count a child in its parent (the parent's slot), for a child added by the parent's
-- own run (core/src/flow.rs, `JobContext::add_child`: its lease token must hold) or to a given
-- parent that waits for its children (`Queue::add_child`: not while it runs, whose end reads what
-- its run counted). The child's add came first (its own slot): a child that
-- finished before this step left its outcome in the parent (child_done.lua, 'early'), and is not
-- counted as pending. Idempotent: a child known to the parent in any form is left as it is.
-- KEYS[1] record       the parent's emq:{q}:<id>, HASH
-- KEYS[2] active       ZSET
-- KEYS[3] leases       HASH
-- KEYS[4] waiting_children ZSET
-- ARGV[1] id           the parent's id
-- ARGV[2] token        the parent's lease token when it adds to itself ('' for a given parent)
-- ARGV[3] child        "<queue>:<id>" of the child
-- Returns 'attached', 'known' (counted or done before), 'lost' (the caller's lease is gone),
-- 'state' (a given parent is not waiting for children) or 'missing'.
local id, token, child = ARGV[1], ARGV[2], ARGV[3]
if call('EXISTS', K.record) == 0 then return 'missing' end
if call('HEXISTS', K.record, 'dep:' .. child) == 1 or call('HEXISTS', K.record, 'child:' .. child) == 1
    or call('HEXISTS', K.record, 'child_failed:' .. child) == 1 then
  return 'known'
end
if token ~= '' then
  local lease = call('HGET', K.leases, id)
  if not lease or string.sub(lease, 1, #token + 1) ~= token .. '|' then return 'lost' end
elseif call('ZSCORE', K.active, id) or not call('ZSCORE', K.waiting_children, id) then
  return 'state'
end
call('HSET', K.record, 'dep:' .. child, '1')
call('HINCRBY', K.record, 'pending', 1)
return 'attached'
