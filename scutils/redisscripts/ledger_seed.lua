-- Queues a seed and counts it in its crawl's ledger, only when the queue
-- did not hold the same member already (a request fed twice is queued
-- once). Go: Seed.
-- include: ledger_new_work
-- include: fifo_score
--
-- KEYS[1] the queue; KEYS[2..5] the crawl's ledger (ledger_new_work's keys)
-- ARGV[1] score (-priority: fifo_score adds the tiebreak), ARGV[2] member, ARGV[3] the crawl's index member,
-- ARGV[4] stamp, ARGV[5] the ledger's ttl (seconds)
--
-- Returns 1 when the seed was queued, 0 when the queue held it already.
if redis.call('ZADD', KEYS[1], 'NX', fifo_score({}, KEYS[1], ARGV[1]), ARGV[2]) == 0 then
  return 0
end
ledger_new_work({KEYS[2], KEYS[3], KEYS[4], KEYS[5]}, ARGV[3], 'seeds', 1, ARGV[4], ARGV[5])
return 1
