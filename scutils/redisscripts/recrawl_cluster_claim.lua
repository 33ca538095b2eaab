-- Redis Cluster mode, step 1 of starting run n of a scheduled crawl: the
-- claim, in the slot of the tag {ledger} (the schedule, the due set, the
-- set of runs being started and the crawl's completion marker), once
-- however many Redis Monitors try. The checks are recrawl_start.lua's
-- (recrawl_due), and run n-1 has completed when its completion marker says
-- 'done|<stamp>' (its crawl-complete is out) at least margin seconds ago,
-- or is gone (expired). Then runs_started is n, the schedule records
-- 'starting' = n and the run's domains, the crawl enters the starting set,
-- the marker holds completers off the crawl (ARGV[5]) until the run has
-- started in every domain (recrawl_cluster_domain.lua, then
-- recrawl_cluster_started.lua), and run n+1 is due. Go: RecrawlClusterClaim.
-- include: recrawl_due
--
-- KEYS[1] the schedule hash, KEYS[2] the due set, KEYS[3] the crawl's
-- completion marker, KEYS[4] the starting set
-- (cluster:{ledger}:recrawl-starting)
-- ARGV[1] the crawl's index member, ARGV[2] now (stamp), ARGV[3] n,
-- ARGV[4] the ledger's ttl (seconds), ARGV[5] the marker's hold
-- ('recrawl-start-<n>|<deadline>'), ARGV[6] margin (seconds), ARGV[7] the
-- run's domains, one a line
--
-- Returns 'claimed', or why not: recrawl_due's answers, or 'busy' (run
-- n-1 has not completed: looked at again in a second).
local now, n = tonumber(ARGV[2]), tonumber(ARGV[3])
local why, s = recrawl_due(KEYS[1], KEYS[2], ARGV[1], now, n, ARGV[4])
if why then
  return why
end
local v = redis.call('GET', KEYS[3])
if v then
  local done = string.sub(v, 1, 5) == 'done|' and tonumber(string.sub(v, 6))
  if not done or done > now - tonumber(ARGV[6]) then
    redis.call('ZADD', KEYS[2], string.format('%.3f', now + 1), ARGV[1])
    return 'busy'
  end
end
redis.call('SET', KEYS[3], ARGV[5], 'EX', ARGV[4])
redis.call('HSET', KEYS[1], 'starting', tostring(n), 'starting_domains', ARGV[7])
redis.call('ZADD', KEYS[4], now, ARGV[1])
recrawl_begun(KEYS[1], KEYS[2], ARGV[1], now, ARGV[2], n, s, ARGV[4])
return 'claimed'
