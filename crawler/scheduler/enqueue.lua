-- Queues the follow-up requests of one crawled page, applying the crawl
-- blacklist, the duplicate filter and the page limits in one atomic step.
--
-- KEYS[1] the spider's blacklist set     KEYS[2] the crawl's dupefilter set
-- then for request i: KEYS[3i] queue, KEYS[3i+1] domain max page counter,
--                     KEYS[3i+2] global page counter
-- ARGV[1] "<appid>||<crawlid>"            ARGV[2] dupefilter ttl (seconds)
-- ARGV[3] domain max page ttl             ARGV[4] global page limit (0: none)
-- ARGV[5] global page ttl                 ARGV[6] the parent's fingerprint ("" none)
-- then for request i: ARGV[6+4i-3] fingerprint, ARGV[6+4i-2] member,
--                     ARGV[6+4i-1] score, ARGV[6+4i] domain_max_pages (0: none),
--                     and the announce channel at ARGV[6+4n+i]
--
-- Returns one code per request: 0 queued, 1 duplicate, 2 domain_max_pages
-- reached, 3 global page limit reached; or {-1} when the crawl is blacklisted.
-- As the original: the duplicate filter and the counters get their expiry
-- refreshed on every use, and a counter reaching its limit stops the request
-- that reached it. A queue that did not exist is announced on its channel.
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then
  return {-1}
end
local dupe_ttl = tonumber(ARGV[2])
if ARGV[6] ~= '' then
  redis.call('SADD', KEYS[2], ARGV[6])
  redis.call('EXPIRE', KEYS[2], dupe_ttl)
end
local n = (#KEYS - 2) / 3
local out = {}
for i = 1, n do
  local queue, dmax_key, global_key = KEYS[3 * i], KEYS[3 * i + 1], KEYS[3 * i + 2]
  local base = 6 + 4 * (i - 1)
  local fp, member, score, dmax = ARGV[base + 1], ARGV[base + 2], ARGV[base + 3], tonumber(ARGV[base + 4])
  local code = 0
  if redis.call('SADD', KEYS[2], fp) == 0 then
    code = 1
  end
  redis.call('EXPIRE', KEYS[2], dupe_ttl)
  if code == 0 and dmax > 0 then
    local count = tonumber(redis.call('GET', dmax_key)) or 0
    if count >= dmax then
      redis.call('EXPIRE', dmax_key, tonumber(ARGV[3]))
      code = 2
    else
      count = redis.call('INCR', dmax_key)
      redis.call('EXPIRE', dmax_key, tonumber(ARGV[3]))
      if count >= dmax then code = 2 end
    end
  end
  local glimit = tonumber(ARGV[4])
  if code == 0 and glimit > 0 then
    local count = tonumber(redis.call('GET', global_key)) or 0
    if count >= glimit then
      code = 3
    else
      count = redis.call('INCR', global_key)
      redis.call('EXPIRE', global_key, tonumber(ARGV[5]))
      if count >= glimit then code = 3 end
    end
  end
  if code == 0 then
    local existed = redis.call('EXISTS', queue)
    redis.call('ZADD', queue, score, member)
    if existed == 0 then
      redis.call('PUBLISH', ARGV[6 + 4 * n + i], queue)
    end
  end
  out[i] = code
end
return out
