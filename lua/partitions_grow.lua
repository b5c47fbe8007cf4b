-- partitions_grow: publish a partitioned queue's grown layout (core/src/queue/grow.rs), once: the
-- layout is replaced only if it is still the one the caller read, so of two growths racing one
-- wins and the other is told what is stored now.
-- KEYS[1] partitions   {emq}:partitions, HASH queue name -> its layout "N0,N1,…"
-- ARGV[1] queue        the partitioned queue's name (a field)
-- ARGV[2] was          the layout the caller read
-- ARGV[3] grown        the layout to store
-- Returns {1} when stored, else {0, what is stored now ("" none)}.
local now = call('HGET', K.partitions, ARGV[1])
if now ~= ARGV[2] then return {0, now or ''} end
call('HSET', K.partitions, ARGV[1], ARGV[3])
return {1}
