-- Ends a crawl's schedule, for a stop or an expire: no run starts after
-- it (the run in progress is the action's to end). The schedule is kept
-- for info answers until it expires. Go: RecrawlCancel.
--
-- KEYS[1] the schedule hash, KEYS[2] recrawl:due
-- ARGV[1] the crawl's index member, ARGV[2] 'stop' or 'expire', ARGV[3]
-- how long the ended schedule is kept (seconds)
--
-- Returns 1 when a live schedule ended, else 0.
if redis.call('HGET', KEYS[1], 'state') ~= 'active' then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'ended', 'ended_by', ARGV[2])
redis.call('HDEL', KEYS[1], 'next_run_at')
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
