-- Claims a crawl's completion once across every shard of a Redis Cluster,
-- where a crawl's ledger is split over its domains' slots: the marker, a
-- key in one slot, holds "<owner>|<deadline>" while a completer publishes
-- the crawl's crawl-complete and "done|<stamp>" once it is out. A claim
-- whose deadline passed (its completer died) is taken over. Go: Mark.
--
-- KEYS[1] the crawl's completion marker
-- (cluster:{ledger}:completed:<spiderid>:<appid>:<crawlid>)
-- ARGV[1] "claim" or "done", ARGV[2] the claim "<owner>|<deadline>",
-- ARGV[3] now (epoch seconds), ARGV[4] the marker's ttl (seconds)
--
-- Returns, for "claim": 1 claimed now, 0 claimed by another completer
-- whose deadline has not passed, 2 done already; for "done": 1 marked
-- done, 0 when ARGV[2] no longer holds the claim.
local v = redis.call('GET', KEYS[1])
if ARGV[1] == 'done' then
  if v ~= ARGV[2] then
    return 0
  end
  redis.call('SET', KEYS[1], 'done|' .. ARGV[3], 'EX', ARGV[4])
  return 1
end
if v then
  if string.sub(v, 1, 5) == 'done|' then
    return 2
  end
  local deadline = tonumber(string.match(v, '|([^|]*)$'))
  if deadline and deadline > tonumber(ARGV[3]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[4])
return 1
