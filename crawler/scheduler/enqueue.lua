-- Queues the follow-up requests of one crawled page, applying the crawl
-- blacklist, the duplicate filter and the page limits, and counts in the
-- crawls' ledgers what it queued and what it refused, all in one atomic
-- step (ledger_new_work, from the ledger package, is prepended).
--
-- KEYS[1] the spider's blacklist set     KEYS[2] the crawl's dupefilter set
-- then for request i: KEYS[3i] queue, KEYS[3i+1] domain max page counter,
--                     KEYS[3i+2] global page counter
-- then for ledger j: its four ledger.NewWorkKeys
-- ARGV[1] "<appid>||<crawlid>"            ARGV[2] dupefilter ttl (seconds)
-- ARGV[3] domain max page ttl             ARGV[4] global page limit (0: none)
-- ARGV[5] global page ttl                 ARGV[6] the parent's fingerprint ("" none)
-- ARGV[7] ledger stamp                    ARGV[8] ledger ttl (seconds)
-- ARGV[9] number of ledgers L, then each ledger's index member
-- then for request i: fingerprint, member, score, domain_max_pages (0:
--                     none), ledger number (1..L)
-- then the announce channel of each request
-- then refusals decided before the script, as triples: ledger number,
--                     reason, count
--
-- Returns one code per request: 0 queued, 1 duplicate, 2 domain_max_pages
-- reached, 3 global page limit reached; or {-1} when the crawl is
-- blacklisted (nothing queued, every request counted as crawl_blacklisted).
-- As the original: the duplicate filter and the counters get their expiry
-- refreshed on every use, and a counter reaching its limit stops the request
-- that reached it. A queue that did not exist is announced on its channel.
-- A ledger that gets refusals only, and had no expiry, gets the ledger ttl.
local stamp, ledger_ttl, nledgers = ARGV[7], ARGV[8], tonumber(ARGV[9])
local members_at = 9
local first_request = members_at + nledgers
local n = (#KEYS - 2 - 4 * nledgers) / 3
local channels_at = first_request + 5 * n
local refusals_at = channels_at + n
local ledger_keys_at = 2 + 3 * n

-- counts[j][field] = n, for ledger j
local counts = {}
local function count(j, field, by)
  if by == 0 then return end
  counts[j] = counts[j] or {}
  counts[j][field] = (counts[j][field] or 0) + by
end
for i = refusals_at + 1, #ARGV, 3 do
  count(tonumber(ARGV[i]), 'refused:' .. ARGV[i + 1], tonumber(ARGV[i + 2]))
end
local function write_counts()
  for j = 1, nledgers do
    local c = counts[j]
    if c then
      local at = ledger_keys_at + 4 * (j - 1)
      local keys = {KEYS[at + 1], KEYS[at + 2], KEYS[at + 3], KEYS[at + 4]}
      local enqueued = c['enqueued'] or 0
      c['enqueued'] = nil
      if enqueued > 0 then
        ledger_new_work(keys, ARGV[members_at + j], 'enqueued', enqueued, stamp, ledger_ttl)
      end
      for field, by in pairs(c) do
        redis.call('HINCRBY', keys[1], field, by)
      end
      if enqueued == 0 then
        redis.call('HSET', keys[1], 'last_activity', stamp)
        if redis.call('TTL', keys[1]) < 0 then
          redis.call('EXPIRE', keys[1], ledger_ttl)
        end
      end
    end
  end
end

if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then
  for i = 1, n do
    count(tonumber(ARGV[first_request + 5 * (i - 1) + 5]), 'refused:crawl_blacklisted', 1)
  end
  write_counts()
  return {-1}
end
local dupe_ttl = tonumber(ARGV[2])
if ARGV[6] ~= '' then
  redis.call('SADD', KEYS[2], ARGV[6])
  redis.call('EXPIRE', KEYS[2], dupe_ttl)
end
local reasons = {[1] = 'refused:duplicate', [2] = 'refused:page_limit', [3] = 'refused:page_limit'}
local out = {}
for i = 1, n do
  local queue, dmax_key, global_key = KEYS[3 * i], KEYS[3 * i + 1], KEYS[3 * i + 2]
  local base = first_request + 5 * (i - 1)
  local fp, member, score, dmax = ARGV[base + 1], ARGV[base + 2], ARGV[base + 3], tonumber(ARGV[base + 4])
  local ledger = tonumber(ARGV[base + 5])
  local code = 0
  if redis.call('SADD', KEYS[2], fp) == 0 then
    code = 1
  end
  redis.call('EXPIRE', KEYS[2], dupe_ttl)
  if code == 0 and dmax > 0 then
    local pages = tonumber(redis.call('GET', dmax_key)) or 0
    if pages >= dmax then
      redis.call('EXPIRE', dmax_key, tonumber(ARGV[3]))
      code = 2
    else
      pages = redis.call('INCR', dmax_key)
      redis.call('EXPIRE', dmax_key, tonumber(ARGV[3]))
      if pages >= dmax then code = 2 end
    end
  end
  local glimit = tonumber(ARGV[4])
  if code == 0 and glimit > 0 then
    local pages = tonumber(redis.call('GET', global_key)) or 0
    if pages >= glimit then
      code = 3
    else
      pages = redis.call('INCR', global_key)
      redis.call('EXPIRE', global_key, tonumber(ARGV[5]))
      if pages >= glimit then code = 3 end
    end
  end
  if code == 0 then
    local existed = redis.call('EXISTS', queue)
    if redis.call('ZADD', queue, score, member) == 1 then
      count(ledger, 'enqueued', 1)
    else
      code = 1 -- the very member is queued already (its filter entry expired)
    end
    if existed == 0 then
      redis.call('PUBLISH', ARGV[channels_at + i], queue)
    end
  end
  if code ~= 0 then
    count(ledger, reasons[code], 1)
  end
  out[i] = code
end
write_counts()
return out
