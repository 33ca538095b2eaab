-- Queues the follow-up requests of one crawled page, applying the crawl
-- blacklist, the duplicate filter and the page limits, and counts in the
-- crawls' ledgers what it queued and what it refused, all in one atomic
-- step (ledger_new_work, from the ledger package, is prepended). The
-- duplicate filter is read and written once for the whole page (one
-- SMISMEMBER, one SADD, one EXPIRE), each queue checked once for being new.
--
-- KEYS[1] the spider's blacklist set     KEYS[2] the crawl's dupefilter set
-- then the Q queues (KEYS[2 + q])
-- then for ledger j: its four ledger.NewWorkKeys
-- then for each request with page limits: its domain max page counter and
--                     its global page counter
-- ARGV[1] "<appid>||<crawlid>"            ARGV[2] dupefilter ttl (seconds)
-- ARGV[3] domain max page ttl             ARGV[4] global page limit (0: none)
-- ARGV[5] global page ttl                 ARGV[6] the parent's fingerprint ("" none)
-- ARGV[7] ledger stamp                    ARGV[8] ledger ttl (seconds)
-- ARGV[9] Q queues                        ARGV[10] L ledgers
-- ARGV[11] N requests
-- then each ledger's index member, then each queue's announce channel
-- then for request i: fingerprint, member, score, queue number (1..Q),
--                     ledger number (1..L), domain_max_pages (0: none),
--                     its page limit counters' number (0: none)
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
local stamp, ledger_ttl = ARGV[7], ARGV[8]
local nqueues, nledgers, n = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local members_at = 11
local channels_at = members_at + nledgers
local first_request = channels_at + nqueues
local refusals_at = first_request + 7 * n
local ledger_keys_at = 2 + nqueues
local limit_keys_at = ledger_keys_at + 4 * nledgers

-- request(i, f) is field f (1..7) of request i.
local function request(i, f)
  return ARGV[first_request + 7 * (i - 1) + f]
end

-- call runs a command taking many arguments after its key in chunks, as
-- Lua's unpack takes a few thousand values at most; it returns the
-- replies concatenated when they are arrays.
local function call(cmd, key, args)
  local out = {}
  for i = 1, #args, 1000 do
    local res = redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
    if type(res) == 'table' then
      for _, v in ipairs(res) do
        out[#out + 1] = v
      end
    end
  end
  return out
end

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
    count(tonumber(request(i, 5)), 'refused:crawl_blacklisted', 1)
  end
  write_counts()
  return {-1}
end

-- The duplicate filter: the parent is seen, and so is a link met earlier
-- on the same page.
local codes = {}
local fps = {}
for i = 1, n do
  fps[i] = request(i, 1)
end
local known = call('SMISMEMBER', KEYS[2], fps)
local seen, added = {}, {}
if ARGV[6] ~= '' then
  seen[ARGV[6]] = true
  added[1] = ARGV[6]
end
for i = 1, n do
  if known[i] == 1 or seen[fps[i]] then
    codes[i] = 1
  else
    codes[i] = 0
    seen[fps[i]] = true
    added[#added + 1] = fps[i]
  end
end
if #added > 0 then
  call('SADD', KEYS[2], added)
end
if #added > 0 or n > 0 then
  redis.call('EXPIRE', KEYS[2], tonumber(ARGV[2]))
end

-- The page limits, request by request.
local glimit = tonumber(ARGV[4])
for i = 1, n do
  local limits = tonumber(request(i, 7))
  if codes[i] == 0 and limits > 0 then
    local dmax_key, global_key = KEYS[limit_keys_at + 2 * limits - 1], KEYS[limit_keys_at + 2 * limits]
    local dmax = tonumber(request(i, 6))
    if dmax > 0 then
      local pages = tonumber(redis.call('GET', dmax_key)) or 0
      if pages >= dmax then
        redis.call('EXPIRE', dmax_key, tonumber(ARGV[3]))
        codes[i] = 2
      else
        pages = redis.call('INCR', dmax_key)
        redis.call('EXPIRE', dmax_key, tonumber(ARGV[3]))
        if pages >= dmax then codes[i] = 2 end
      end
    end
    if codes[i] == 0 and glimit > 0 then
      local pages = tonumber(redis.call('GET', global_key)) or 0
      if pages >= glimit then
        codes[i] = 3
      else
        pages = redis.call('INCR', global_key)
        redis.call('EXPIRE', global_key, tonumber(ARGV[5]))
        if pages >= glimit then codes[i] = 3 end
      end
    end
  end
end

-- The queues: each is checked once for being new; a member queued
-- already (its filter entry expired) is a duplicate. (One ZADD per member
-- costs Redis less than finding the queued ones with ZMSCORE first.)
local existed = {}
for i = 1, n do
  if codes[i] == 0 then
    local q = tonumber(request(i, 4))
    local queue = KEYS[2 + q]
    if existed[q] == nil then
      existed[q] = redis.call('EXISTS', queue)
      if existed[q] == 0 then
        redis.call('PUBLISH', ARGV[channels_at + q], queue)
      end
    end
    if redis.call('ZADD', queue, request(i, 3), request(i, 2)) == 0 then
      codes[i] = 1
    end
  end
end

local reasons = {[0] = 'enqueued', [1] = 'refused:duplicate', [2] = 'refused:page_limit', [3] = 'refused:page_limit'}
for i = 1, n do
  count(tonumber(request(i, 5)), reasons[codes[i]], 1)
end
write_counts()
return codes
