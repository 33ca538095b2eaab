-- Redis Cluster mode: queues a seed of a scheduled crawl in run 1 and
-- counts it in the crawl's ledger share of the seed's domain (marked run
-- 1), in the domain's slot, once recrawl_cluster_feed.lua said run 1 is
-- the run in progress. A seed fed again while it waits is queued once.
-- Go: RecrawlClusterSeed.
-- include: ledger_new_work
-- include: fifo_score
-- include: recrawl_seed_first
--
-- KEYS[1] the seed's queue, KEYS[2..5] the crawl's ledger share of the
-- seed's domain (ledger_new_work's keys)
-- ARGV[1] the crawl's index member, ARGV[2] now (stamp), ARGV[3] the
-- ledger's ttl (seconds), ARGV[4] the seed's score (-priority: fifo_score
-- adds the tiebreak), ARGV[5] the seed's member for run 1
--
-- Returns 1.
recrawl_seed_first(KEYS[1], {KEYS[2], KEYS[3], KEYS[4], KEYS[5]}, ARGV[1], ARGV[4], ARGV[5], ARGV[2], ARGV[3])
return 1
