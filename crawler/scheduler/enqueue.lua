-- Queues the follow-up requests of one crawled page, applying the crawl
-- blacklist, the duplicate filter and the page limits, and counts in the
-- crawls' ledgers what it queued and what it refused, all in one atomic
-- step (ledger_new_work, from the ledger package, is prepended). The
-- duplicate filter is read and written once for the whole page (one
-- SMISMEMBER, one SADD, one EXPIRE), each queue checked once for being new,
-- and each group of requests queued with one ZADD.
--
-- Requests come in groups: one queue, one ledger, one score and the same
-- page limits (a page's links to one domain, usually all of them), so that
-- each request needs three arguments only.
--
-- KEYS[1] the spider's blacklist set     KEYS[2] the crawl's dupefilter set
-- then the Q queues (KEYS[2 + q])
-- then for ledger j: its four ledger.NewWorkKeys
-- then for limit pair p: its domain max page counter and its global page
--                        counter
-- ARGV[1] "<appid>||<crawlid>"            ARGV[2] dupefilter ttl (seconds)
-- ARGV[3] domain max page ttl             ARGV[4] global page limit (0: none)
-- ARGV[5] global page ttl                 ARGV[6] the parent's fingerprint ("" none)
-- ARGV[7] ledger stamp                    ARGV[8] ledger ttl (seconds)
-- ARGV[9] Q queues    ARGV[10] L ledgers    ARGV[11] G groups
-- ARGV[12] N requests
-- then each ledger's index member, then each queue's announce channel
-- then for group g: queue number (1..Q), ledger number (1..L), score,
--                   domain_max_pages (0: none), limit pair (0: none)
-- then for request i, in the page's order: fingerprint, member, group
--                   number (1..G)
-- then refusals decided before the script, as triples: ledger number,
--                   reason, count
--
-- Returns, for each group, how many of its requests were queued, how many
-- were duplicates and how many reached a page limit; or {-1} when the
-- crawl is blacklisted (nothing queued, every request counted as
-- crawl_blacklisted).
-- As the original: the duplicate filter and the counters get their expiry
-- refreshed on every use, and a counter reaching its limit stops the request
-- that reached it. A member its queue holds already (its filter entry
-- expired) is a duplicate. A queue that did not exist is announced on its
-- channel. A ledger that gets refusals only, and had no expiry, gets the
-- ledger ttl.
local stamp, ledger_ttl = ARGV[7], ARGV[8]
local nqueues, nledgers, ngroups, n = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local members_at = 12
local channels_at = members_at + nledgers
local groups_at = channels_at + nqueues
local first_request = groups_at + 5 * ngroups
local refusals_at = first_request + 3 * n
local ledger_keys_at = 2 + nqueues
local limit_keys_at = ledger_keys_at + 4 * nledgers

local g_queue, g_ledger, g_score, g_dmax, g_limits = {}, {}, {}, {}, {}
for g = 1, ngroups do
  local at = groups_at + 5 * (g - 1)
  g_queue[g], g_ledger[g], g_score[g] = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), ARGV[at + 3]
  g_dmax[g], g_limits[g] = tonumber(ARGV[at + 4]), tonumber(ARGV[at + 5])
end
local req_group = {}
for i = 1, n do
  req_group[i] = tonumber(ARGV[first_request + 3 * i])
end

-- call runs a command taking many arguments after its key in chunks, as
-- Lua's unpack takes a few thousand values at most; it returns the
-- replies concatenated when they are arrays, summed when numbers.
local function call(cmd, key, args)
  local out, sum = {}, 0
  for i = 1, #args, 1000 do
    local res = redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
    if type(res) == 'table' then
      for _, v in ipairs(res) do
        out[#out + 1] = v
      end
    else
      sum = sum + res
    end
  end
  return out, sum
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
    count(g_ledger[req_group[i]], 'refused:crawl_blacklisted', 1)
  end
  write_counts()
  return {-1}
end

-- The duplicate filter: the parent is seen, and so is a link met earlier
-- on the same page.
local fps = {}
for i = 1, n do
  fps[i] = ARGV[first_request + 3 * i - 2]
end
local known = call('SMISMEMBER', KEYS[2], fps)
local seen, added = {}, {}
if ARGV[6] ~= '' then
  seen[ARGV[6]] = true
  added[1] = ARGV[6]
end
local new = {}
local dups, limited = {}, {}
for g = 1, ngroups do
  dups[g], limited[g] = 0, 0
end
for i = 1, n do
  if known[i] == 1 or seen[fps[i]] then
    dups[req_group[i]] = dups[req_group[i]] + 1
  else
    new[i] = true
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

-- The page limits, request by request, in the page's order.
local glimit = tonumber(ARGV[4])
for i = 1, n do
  local g = req_group[i]
  local limits = g_limits[g]
  if new[i] and limits > 0 then
    local dmax_key, global_key = KEYS[limit_keys_at + 2 * limits - 1], KEYS[limit_keys_at + 2 * limits]
    local dmax = g_dmax[g]
    if dmax > 0 then
      local pages = tonumber(redis.call('GET', dmax_key)) or 0
      if pages >= dmax then
        redis.call('EXPIRE', dmax_key, tonumber(ARGV[3]))
        new[i] = nil
      else
        pages = redis.call('INCR', dmax_key)
        redis.call('EXPIRE', dmax_key, tonumber(ARGV[3]))
        if pages >= dmax then new[i] = nil end
      end
    end
    if new[i] and glimit > 0 then
      local pages = tonumber(redis.call('GET', global_key)) or 0
      if pages >= glimit then
        new[i] = nil
      else
        pages = redis.call('INCR', global_key)
        redis.call('EXPIRE', global_key, tonumber(ARGV[5]))
        if pages >= glimit then new[i] = nil end
      end
    end
    if not new[i] then
      limited[g] = limited[g] + 1
    end
  end
end

-- The queues: each group with one ZADD; each queue checked once for
-- being new.
local zadds = {}
for i = 1, n do
  if new[i] then
    local g = req_group[i]
    local z = zadds[g]
    if not z then
      z = {}
      zadds[g] = z
    end
    z[#z + 1] = g_score[g]
    z[#z + 1] = ARGV[first_request + 3 * i - 1]
  end
end
local existed = {}
local out = {}
for g = 1, ngroups do
  local queued = 0
  local z = zadds[g]
  if z then
    local q = g_queue[g]
    local queue = KEYS[2 + q]
    if existed[q] == nil then
      existed[q] = redis.call('EXISTS', queue)
      if existed[q] == 0 then
        redis.call('PUBLISH', ARGV[channels_at + q], queue)
      end
    end
    local _, n_added = call('ZADD', queue, z)
    queued = n_added
    dups[g] = dups[g] + #z / 2 - queued
  end
  count(g_ledger[g], 'enqueued', queued)
  count(g_ledger[g], 'refused:duplicate', dups[g])
  count(g_ledger[g], 'refused:page_limit', limited[g])
  out[#out + 1] = queued
  out[#out + 1] = dups[g]
  out[#out + 1] = limited[g]
end
write_counts()
return out
