-- ledger_new_work(keys, member, field, n, stamp, ttl) counts n requests of
-- new work (field 'seeds' or 'enqueued') in a crawl's ledger, in the step
-- that queues them, as ledger.Tally.Write does for new work:
--   keys   {ledger hash, ledger:active, ledger:crawls,
--          ledger:app:<appid>:crawls} (the Ledger type, passed in KEYS)
--   member the crawl's index member, ["<spiderid>","<appid>","<crawlid>"]
--   stamp  now, epoch seconds with milliseconds; ttl the ledger's, seconds
-- A crawl in the active set was started, indexed and not completed when
-- it entered it (a completion takes it out in the same step), so only a
-- crawl entering the active set is (re)started and indexed: four writes
-- fewer for each page of a running crawl.
local function ledger_new_work(keys, member, field, n, stamp, ttl)
  redis.call('HINCRBY', keys[1], field, n)
  redis.call('HSET', keys[1], 'last_activity', stamp)
  redis.call('EXPIRE', keys[1], ttl)
  if redis.call('ZADD', keys[2], stamp, member) == 1 then
    redis.call('HSETNX', keys[1], 'started', stamp)
    redis.call('HDEL', keys[1], 'completed')
    redis.call('ZADD', keys[3], 'NX', stamp, member)
    redis.call('ZADD', keys[4], 'NX', stamp, member)
  end
end
