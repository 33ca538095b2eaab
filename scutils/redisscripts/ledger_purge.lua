-- Removes members of one crawl from a queue and counts those removed as
-- purged, in one step. The count is kept only where the crawl has a ledger
-- (a crawl fed by the original's Kafka Monitor has none). Go: Purge.
--
-- KEYS[1] the queue, KEYS[2] the crawl's ledger hash
-- ARGV[1] the field counting them ('purged:stop' or 'purged:expire'),
-- ARGV[2] stamp, ARGV[3..] the members
--
-- Returns how many members it removed.
local n = redis.call('ZREM', KEYS[1], unpack(ARGV, 3))
if n > 0 and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HINCRBY', KEYS[2], ARGV[1], n)
  redis.call('HINCRBY', KEYS[2], 'done', n)
  redis.call('HSET', KEYS[2], 'last_activity', ARGV[2])
end
return n
