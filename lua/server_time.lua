-- server_time: the clock of the node that owns the queue (the clock every script of the queue
-- stamps with), for readers that compare against stamps: the audit, scheduler listings, metrics
-- trims, `emq migrate`'s remaining delays. Touches no key.
-- KEYS[1] meta         HASH (names the queue's slot, so the call reaches its node)
-- Returns the server's time in milliseconds since the epoch.
return now_ms()
