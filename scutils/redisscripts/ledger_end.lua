-- Records that a stop or an expire ended a crawl and holds completers off
-- it (a claim, as a completer's) while the action purges the crawl and
-- answers. Nothing is recorded for a crawl without a ledger, one already
-- completed, or one whose crawl-complete a completer is publishing right
-- now: that crawl finished before the action came. Go: End.
--
-- KEYS[1] the crawl's ledger hash
-- ARGV[1] 'stop' or 'expire', ARGV[2] now (epoch seconds), ARGV[3] the
-- hold, "<holder>|<deadline>", or '' to record ended_by alone (a share of a
-- crawl on a Redis Cluster, whose completion marker holds completers off),
-- ARGV[4] the holder
--
-- Returns 1 when recorded, else 0.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local v = redis.call('HMGET', KEYS[1], 'completed', 'completing')
if v[1] then
  return 0
end
if v[2] and string.sub(v[2], 1, #ARGV[4] + 1) ~= ARGV[4] .. '|' then
  local deadline = tonumber(string.match(v[2], '|([^|]*)$'))
  if deadline and deadline > tonumber(ARGV[2]) then
    return 0
  end
end
if ARGV[3] == '' then
  redis.call('HSET', KEYS[1], 'ended_by', ARGV[1])
else
  redis.call('HSET', KEYS[1], 'ended_by', ARGV[1], 'completing', ARGV[3])
end
return 1
