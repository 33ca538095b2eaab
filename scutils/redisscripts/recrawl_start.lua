-- Starts run n of a scheduled crawl, once however many Redis Monitors try:
-- only while its schedule is live, run n-1 is the last one started
-- (runs_started = n-1), run n is due, and run n-1 has completed (its
-- crawl-complete is out). Run n-1's ledger is kept in the runs hash (its
-- fields sorted, one line each for name and value), the crawl's ledger
-- starts afresh with run n's seeds, the duplicate filter and the other
-- keys named are dropped so every page is reachable again, and run n+1 is
-- due every seconds from now (none once runs have started). A schedule
-- whose expires has passed ends instead. Go: RecrawlStart.
-- include: ledger_new_work
-- include: fifo_score
-- include: recrawl_archive
-- include: recrawl_due
-- include: recrawl_run_seeds
--
-- KEYS[1] the schedule hash, KEYS[2] recrawl:due, KEYS[3..6] the crawl's
-- ledger (ledger_new_work's keys), KEYS[7] the crawl's runs hash, KEYS[8..]
-- the seeds' queues (nq of them), then the keys to drop (the duplicate
-- filter, page-limit counters)
-- ARGV[1] the crawl's index member, ARGV[2] now (stamp), ARGV[3] n,
-- ARGV[4] the ledger's ttl (seconds), ARGV[5] the queue announcement
-- channel, ARGV[6] the most past runs kept, ARGV[7] nq, then per seed its
-- queue's number (1..nq), score (-priority: fifo_score adds the
-- tiebreak) and member
--
-- Returns 'started', or why not: 'ended' (no live schedule), 'moved'
-- (runs_started is not n-1: another monitor started run n), 'early' (not
-- due), 'busy' (run n-1 has not completed: looked at again in a second),
-- 'expired' (the schedule ended now) or 'over' (every run has started).
local now, n = tonumber(ARGV[2]), tonumber(ARGV[3])
local why, s = recrawl_due(KEYS[1], KEYS[2], ARGV[1], now, n, ARGV[4])
if why then
  return why
end
if redis.call('EXISTS', KEYS[3]) == 1 and not redis.call('HGET', KEYS[3], 'completed') then
  redis.call('ZADD', KEYS[2], string.format('%.3f', now + 1), ARGV[1])
  return 'busy'
end
-- Keep run n-1's ledger, then start afresh.
recrawl_archive(KEYS[3], KEYS[7], n - 1, ARGV[6], ARGV[4])
redis.call('DEL', KEYS[3])
local nq = tonumber(ARGV[7])
for k = 8 + nq, #KEYS do
  redis.call('DEL', KEYS[k])
end
local queued = recrawl_run_seeds(KEYS, 7, nq, ARGV, 8, ARGV[5])
ledger_new_work({KEYS[3], KEYS[4], KEYS[5], KEYS[6]}, ARGV[1], 'seeds', queued, ARGV[2], ARGV[4])
redis.call('HSET', KEYS[3], 'run', tostring(n))
recrawl_begun(KEYS[1], KEYS[2], ARGV[1], now, ARGV[2], n, s, ARGV[4])
return 'started'
