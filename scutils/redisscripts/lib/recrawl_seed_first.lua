-- recrawl_seed_first(queue, ledger, member, score, seed, stamp, ttl)
-- queues a scheduled crawl's seed in run 1 (ZADD NX: a seed fed again
-- while it waits is queued once) and counts it in the crawl's ledger
-- (ledger_new_work's keys: in Redis Cluster mode the share of the seed's
-- domain), marking the ledger as run 1's. Needs ledger_new_work and
-- fifo_score.
local function recrawl_seed_first(queue, ledger, member, score, seed, stamp, ttl)
  if redis.call('ZADD', queue, 'NX', fifo_score({}, queue, score), seed) == 1 then
    ledger_new_work(ledger, member, 'seeds', 1, stamp, ttl)
    redis.call('HSET', ledger[1], 'run', '1')
  end
end
