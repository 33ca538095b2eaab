-- Redis Cluster mode, step 3 of starting run n of a scheduled crawl, in
-- the slot of the tag {ledger}, once the run started in every domain
-- (recrawl_cluster_domain.lua): the schedule no longer says 'starting',
-- the crawl leaves the starting set, and the completion marker's hold
-- (recrawl_cluster_claim.lua's) becomes 'recrawl|0': a run goes on, a
-- completer may claim its completion. Go: RecrawlClusterStarted.
--
-- KEYS[1] the schedule hash, KEYS[2] the crawl's completion marker,
-- KEYS[3] the starting set
-- ARGV[1] the crawl's index member, ARGV[2] n, ARGV[3] the hold's prefix
-- ('recrawl-start-<n>|'), ARGV[4] the ledger's ttl (seconds)
--
-- Returns 1 when run n was starting, else 0 (another monitor finished it).
local was = 0
if redis.call('HGET', KEYS[1], 'starting') == ARGV[2] then
  redis.call('HDEL', KEYS[1], 'starting', 'starting_domains')
  was = 1
end
local v = redis.call('GET', KEYS[2])
if v and string.sub(v, 1, #ARGV[3]) == ARGV[3] then
  redis.call('SET', KEYS[2], 'recrawl|0', 'EX', ARGV[4])
end
redis.call('ZREM', KEYS[3], ARGV[1])
return was
