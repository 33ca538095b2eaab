-- Redis Cluster mode, step 2 of starting run n of a scheduled crawl, in
-- one domain's slot, once per domain however often it is tried (the
-- domain's runs hash records the last run started there, 'reset'): the
-- crawl's ledger share of the domain is kept as run n-1's entry of the
-- domain's runs hash (recrawl_archive), dropped and taken out of the
-- domain's active set; the crawl's duplicate filter and page counters of
-- the domain are dropped; the domain's seeds are queued with "run": n,
-- counted in a fresh share marked run n, and their queues announced.
-- Go: RecrawlClusterDomain.
-- include: ledger_new_work
-- include: fifo_score
-- include: recrawl_archive
-- include: recrawl_run_seeds
--
-- KEYS[1..4] the crawl's ledger share of the domain (ledger_new_work's
-- keys), KEYS[5] the domain's runs hash
-- (cluster:{<domain>}:ledger-runs:<spiderid>:<appid>:<crawlid>), KEYS[6..]
-- the seeds' queues (nq of them), then the keys to drop
-- ARGV[1] the crawl's index member, ARGV[2] now (stamp), ARGV[3] n,
-- ARGV[4] the ledger's ttl (seconds), ARGV[5] the queue announcement
-- channel, ARGV[6] the most past runs kept, ARGV[7] nq, then per seed its
-- queue's number (1..nq), score and member
--
-- Returns 1 when run n started in the domain now, 0 when it had already.
local n = tonumber(ARGV[3])
if (tonumber(redis.call('HGET', KEYS[5], 'reset')) or 0) >= n then
  return 0
end
recrawl_archive(KEYS[1], KEYS[5], n - 1, ARGV[6], ARGV[4])
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
local nq = tonumber(ARGV[7])
for k = 6 + nq, #KEYS do
  redis.call('DEL', KEYS[k])
end
if nq > 0 then
  local queued = recrawl_run_seeds(KEYS, 5, nq, ARGV, 8, ARGV[5])
  ledger_new_work({KEYS[1], KEYS[2], KEYS[3], KEYS[4]}, ARGV[1], 'seeds', queued, ARGV[2], ARGV[4])
  redis.call('HSET', KEYS[1], 'run', tostring(n))
end
redis.call('HSET', KEYS[5], 'reset', tostring(n))
redis.call('EXPIRE', KEYS[5], ARGV[4])
return 1
