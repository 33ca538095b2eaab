-- Redis Cluster mode: takes a crawl whose run completed out of one
-- domain's active set (and with a completed stamp marks its share
-- completed), unless the share is of a later run by now: a re-crawl's
-- next run may have started in the domain since the completer read the
-- shares, and its fresh share and active entry are not the completed
-- run's to end. Go: Deactivate.
--
-- KEYS[1] the crawl's ledger share of the domain
-- (cluster:{<domain>}:ledger:<spiderid>:<appid>:<crawlid>), KEYS[2] the
-- domain's active set (cluster:{<domain>}:ledger-active)
-- ARGV[1] the crawl's index member, ARGV[2] the run completed (0: a crawl
-- without a schedule, whose shares have no run), ARGV[3] the completed
-- stamp ('' marks nothing), ARGV[4] the share's ttl (seconds)
--
-- Returns 1 when done, 0 when the share is of a later run (left alone).
if (tonumber(redis.call('HGET', KEYS[1], 'run')) or 0) > tonumber(ARGV[2]) then
  return 0
end
redis.call('ZREM', KEYS[2], ARGV[1])
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'completed', ARGV[3])
  redis.call('EXPIRE', KEYS[1], ARGV[4])
end
return 1
