-- Redis Cluster mode: keeps a seed of a scheduled crawl in the crawl's
-- schedule, making the schedule when the crawl has no live one (run 1
-- starts now), in the slot of the tag {ledger}, beside the crawl's
-- completion marker: a schedule made sets the marker to 'recrawl|0' (a
-- run goes on; a completer may claim it, a lapsed hold), so that run 2
-- waits for run 1's crawl-complete. The seed itself is queued in its
-- domain's slot by recrawl_cluster_seed.lua when this says run 1 is the
-- run in progress. Go: RecrawlClusterFeed.
-- include: recrawl_schedule_join
--
-- KEYS[1] the schedule hash (cluster:{ledger}:recrawl:...:schedule),
-- KEYS[2] the due set (cluster:{ledger}:recrawl-due), KEYS[3] the crawl's
-- completion marker (cluster:{ledger}:completed:...)
-- ARGV[1] the crawl's index member, ARGV[2] now (stamp), ARGV[3] the
-- ledger's ttl (seconds), ARGV[4] every (seconds), ARGV[5] runs (0: no
-- end), ARGV[6] emit, ARGV[7] adaptive (0 or 1), ARGV[8] expires (epoch
-- seconds, 0: never), ARGV[9] the seed's field ('seed:<url>'), ARGV[10]
-- the seed as the schedule keeps it
--
-- Returns 1 when run 1 is the run in progress (queue the seed now), 0 when
-- the seed waits for the next run.
if recrawl_schedule_join(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]) then
  redis.call('SET', KEYS[3], 'recrawl|0', 'EX', ARGV[3])
end
if redis.call('HGET', KEYS[1], 'runs_started') ~= '1' then
  return 0
end
return 1
