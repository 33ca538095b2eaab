-- Holds completers off a crawl that a stop or an expire ends in Redis
-- Cluster mode, on the crawl's completion marker (ledger_mark.lua's key),
-- while the action purges the crawl and answers; then releases it. The
-- marker is one key in one slot, so one master decides between the action
-- and the completers. Go: Hold.
--
-- KEYS[1] the crawl's completion marker
-- (cluster:{ledger}:completed:<spiderid>:<appid>:<crawlid>)
-- ARGV[1] "hold" or "release", ARGV[2] the holder, ARGV[3] the hold
-- "<holder>|<deadline>", ARGV[4] now (epoch seconds), ARGV[5] the hold's
-- ttl (seconds)
--
-- Returns, for "hold": 1 held (now, or again by the same holder: its
-- retry), 0 when the crawl's crawl-complete is out ("done|...") or a
-- completer's claim that has not lapsed holds it; for "release": 1 when
-- the holder's hold ended, else 0.
local v = redis.call('GET', KEYS[1])
local mine = v and string.sub(v, 1, #ARGV[2] + 1) == ARGV[2] .. '|'
if ARGV[1] == 'release' then
  if mine then
    redis.call('DEL', KEYS[1])
    return 1
  end
  return 0
end
if v and not mine then
  if string.sub(v, 1, 5) == 'done|' then
    return 0
  end
  local deadline = tonumber(string.match(v, '|([^|]*)$'))
  if deadline and deadline > tonumber(ARGV[4]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[3], 'EX', ARGV[5])
return 1
