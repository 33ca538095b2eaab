-- Queues a seed of a scheduled crawl (a crawl request with recrawl) and
-- keeps it in the crawl's schedule for the runs to come. A crawl without a
-- live schedule gets one: run 1 starts now, run 2 is due every seconds
-- later (none when runs is 1). A seed fed to a live schedule joins it: it
-- is queued and counted now while run 1 is the run in progress, else it
-- waits for the next run. Go: RecrawlFeed.
-- include: ledger_new_work
-- include: fifo_score
-- include: recrawl_seed_first
-- include: recrawl_schedule_join
--
-- KEYS[1] the schedule hash, KEYS[2] recrawl:due, KEYS[3] the seed's
-- queue, KEYS[4..7] the crawl's ledger (ledger_new_work's keys)
-- ARGV[1] the crawl's index member, ARGV[2] now (stamp), ARGV[3] the
-- ledger's ttl (seconds), ARGV[4] every (seconds), ARGV[5] runs (0: no
-- end), ARGV[6] emit, ARGV[7] adaptive (0 or 1), ARGV[8] expires (epoch
-- seconds, 0: never), ARGV[9] the seed's field ('seed:<url>'), ARGV[10]
-- the seed as the schedule keeps it, ARGV[11] the seed's score (-priority: fifo_score adds the tiebreak), ARGV[12]
-- the seed's member for run 1
--
-- Returns 1 when the seed was queued in run 1 (or was already), 0 when it
-- waits for the next run.
recrawl_schedule_join(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10])
if redis.call('HGET', KEYS[1], 'runs_started') ~= '1' then
  return 0
end
recrawl_seed_first(KEYS[3], {KEYS[4], KEYS[5], KEYS[6], KEYS[7]}, ARGV[1], ARGV[11], ARGV[12], ARGV[2], ARGV[3])
return 1
