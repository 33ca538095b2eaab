-- Ends a claim once its crawl-complete is published: the crawl is
-- completed and leaves the active set, unless new work arrived meanwhile
-- (then it stays active and completes again later). Go: Complete.
--
-- KEYS[1] the crawl's ledger hash, KEYS[2] ledger:active
-- ARGV[1] the crawl's index member, ARGV[2] the claim (ledger_claim's),
-- ARGV[3] stamp, ARGV[4] the ledger's ttl (seconds)
--
-- Returns 1 when completed, else 0.
if redis.call('HGET', KEYS[1], 'completing') ~= ARGV[2] then
  return 0
end
redis.call('HDEL', KEYS[1], 'completing')
local v = redis.call('HMGET', KEYS[1], 'seeds', 'enqueued', 'done')
if (tonumber(v[1]) or 0) + (tonumber(v[2]) or 0) ~= (tonumber(v[3]) or 0) then
  return 0
end
redis.call('HSET', KEYS[1], 'completed', ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
