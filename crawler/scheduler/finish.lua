-- Finishes crawled pages in one atomic step: ends their leases, queues
-- their follow-up requests through the crawl blacklist, the duplicate
-- filter and the page limits, and counts all of it in the crawls' ledgers
-- (ledger_new_work, from the ledger package, is prepended). Enqueue runs it
-- for one page without a lease; the acknowledgement batches for many.
--
-- A lease found gone is not finished again: its page's counts and
-- follow-ups are skipped. When its owner is gone too, a reaper put its
-- request back in its queue (it is lost to this crawler, and counted when
-- it is done again); otherwise this acknowledgement already happened (a
-- batch sent again after its answer was lost).
--
-- Keys are given by their number in KEYS. KEYS[1] the lease owners,
-- KEYS[2] the lease records.
--
-- ARGV, read in order:
--   stamp, ledger ttl, dupefilter ttl, domain max page ttl, global page
--   limit (0: none), global page ttl
--   L, then per ledger: the number of its first ledger.NewWorkKeys key (the
--     four follow), its index member
--   C, then each queue announce channel
--   O, then each lease owner
--   T, then per tally (what became of requests, the same for many): F,
--     then F triples of ledger number, field, count
--   A, then per acknowledgement: lease id, owner number, tally number (0:
--     none), "1" when it is sent again (an earlier send failed: it may have
--     reached Redis), else "0"
--   P, then per page: the number of its acknowledgement (0: none), the blacklist key's number, "<appid>||<crawlid>",
--     the dupefilter key's number, the page's fingerprint ("" none), R,
--     then R triples of ledger number, reason, count (refused before the
--     script), G, then per group of requests: queue key number, channel
--     number, ledger number, score, domain_max_pages (0: none), the number
--     of its domain max page counter key (its global page counter key
--     follows; 0: no limits), N, then N pairs of fingerprint and member,
--     in the page's order
--
-- Returns, per acknowledgement, 0 finished, 1 lost (reaped) or 2 finished
-- before; then per page 1 followed by, per group, how many were queued,
-- how many were duplicates and how many reached a page limit; or -1 when
-- the crawl is blacklisted (nothing queued, every request counted as
-- crawl_blacklisted); or 0 when the page's lease was not finished now.
-- As the original: the duplicate filter and the counters get their expiry
-- refreshed on every use, and a counter reaching its limit stops the request
-- that reached it. A member its queue holds already (its filter entry
-- expired) is a duplicate. A queue that did not exist is announced on its
-- channel.
local at = 0
local function arg()
  at = at + 1
  return ARGV[at]
end
local function num()
  at = at + 1
  return tonumber(ARGV[at])
end

local stamp, ledger_ttl, dupe_ttl, dmax_ttl = arg(), arg(), arg(), arg()
local glimit, global_ttl = num(), arg()

local ledger_keys, ledger_members = {}, {}
for j = 1, num() do
  ledger_keys[j], ledger_members[j] = num(), arg()
end
local channels = {}
for c = 1, num() do
  channels[c] = arg()
end

-- counts[j][field] = n, for ledger j; touched[j] (below): written by an
-- acknowledgement (its expiry is refreshed)
local counts = {}
local function count(j, field, by)
  if by == 0 then return end
  local c = counts[j]
  if not c then
    c = {}
    counts[j] = c
  end
  c[field] = (c[field] or 0) + by
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

local owners = {}
for o = 1, num() do
  owners[o] = arg()
end
local tallies = {}
for k = 1, num() do
  local t = {}
  for f = 1, num() do
    t[f] = {num(), arg(), num()}
  end
  tallies[k] = t
end

-- The leases: an owner gone was reaped with all its leases. The others
-- end now, with one HDEL for the acknowledgements sent for the first
-- time; one sent again may have ended its lease before, and is looked at
-- alone.
local out = {}
local finished = {} -- finished[a]: acknowledgement a ended its lease now
local alive = {}
if #owners > 0 then
  local scores = redis.call('ZMSCORE', KEYS[1], unpack(owners))
  for o = 1, #owners do
    alive[o] = scores[o] ~= false
  end
end
local tallied = {} -- tallied[k]: how many finished acknowledgements had tally k
local function finish(a, tally)
  finished[a] = true
  out[a] = 0
  if tally > 0 then
    tallied[tally] = (tallied[tally] or 0) + 1
  end
end
local ids = {}
for a = 1, num() do
  local id, owner, tally, again = arg(), num(), num(), arg()
  if again == '0' then
    if alive[owner] then
      ids[#ids + 1] = id
      finish(a, tally)
    else
      out[a] = 1
    end
  elseif redis.call('HDEL', KEYS[2], id) == 1 then
    finish(a, tally)
  elseif alive[owner] then
    out[a] = 2
  else
    out[a] = 1
  end
end
if #ids > 0 then
  call('HDEL', KEYS[2], ids)
end
local touched = {}
for k, n in pairs(tallied) do
  for _, f in ipairs(tallies[k]) do
    count(f[1], f[2], f[3] * n)
    touched[f[1]] = true
  end
end

local existed = {} -- by queue key number
for _ = 1, num() do
  local ack = num()
  local blacklist, bl_member, dupefilter, page_fp = num(), arg(), num(), arg()
  local live = ack == 0 or finished[ack]
  for _ = 1, num() do
    local j, reason, n = num(), arg(), num()
    if live then
      count(j, 'refused:' .. reason, n)
    end
  end
  local ngroups = num()
  local groups = {}
  local fps, members, req_group = {}, {}, {}
  for g = 1, ngroups do
    local grp = {queue = num(), channel = num(), ledger = num(), score = arg(), dmax = num(), limits = num()}
    groups[g] = grp
    for _ = 1, num() do
      fps[#fps + 1] = arg()
      members[#members + 1] = arg()
      req_group[#req_group + 1] = g
    end
  end
  local n = #fps
  if not live then
    out[#out + 1] = 0
  elseif redis.call('SISMEMBER', KEYS[blacklist], bl_member) == 1 then
    for i = 1, n do
      count(groups[req_group[i]].ledger, 'refused:crawl_blacklisted', 1)
    end
    out[#out + 1] = -1
  else
    -- The duplicate filter: the page is seen, and so is a link met earlier
    -- on the same page.
    local dupe_key = KEYS[dupefilter]
    local known = n > 0 and call('SMISMEMBER', dupe_key, fps) or {}
    local seen, added = {}, {}
    if page_fp ~= '' then
      seen[page_fp] = true
      added[1] = page_fp
    end
    local new, dups, limited = {}, {}, {}
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
      call('SADD', dupe_key, added)
    end
    if #added > 0 or n > 0 then
      redis.call('EXPIRE', dupe_key, dupe_ttl)
    end

    -- The page limits, request by request, in the page's order.
    for i = 1, n do
      local grp = groups[req_group[i]]
      if new[i] and grp.limits > 0 then
        local dmax_key, global_key = KEYS[grp.limits], KEYS[grp.limits + 1]
        if grp.dmax > 0 then
          local pages = tonumber(redis.call('GET', dmax_key)) or 0
          if pages >= grp.dmax then
            redis.call('EXPIRE', dmax_key, dmax_ttl)
            new[i] = nil
          else
            pages = redis.call('INCR', dmax_key)
            redis.call('EXPIRE', dmax_key, dmax_ttl)
            if pages >= grp.dmax then new[i] = nil end
          end
        end
        if new[i] and glimit > 0 then
          local pages = tonumber(redis.call('GET', global_key)) or 0
          if pages >= glimit then
            new[i] = nil
          else
            pages = redis.call('INCR', global_key)
            redis.call('EXPIRE', global_key, global_ttl)
            if pages >= glimit then new[i] = nil end
          end
        end
        if not new[i] then
          limited[req_group[i]] = limited[req_group[i]] + 1
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
        z[#z + 1] = groups[g].score
        z[#z + 1] = members[i]
      end
    end
    out[#out + 1] = 1
    for g = 1, ngroups do
      local grp = groups[g]
      local queued = 0
      local z = zadds[g]
      if z then
        local queue = KEYS[grp.queue]
        if existed[grp.queue] == nil then
          existed[grp.queue] = redis.call('EXISTS', queue)
          if existed[grp.queue] == 0 then
            redis.call('PUBLISH', channels[grp.channel], queue)
          end
        end
        local _, n_added = call('ZADD', queue, z)
        queued = n_added
        dups[g] = dups[g] + #z / 2 - queued
      end
      count(grp.ledger, 'enqueued', queued)
      count(grp.ledger, 'refused:duplicate', dups[g])
      count(grp.ledger, 'refused:page_limit', limited[g])
      out[#out + 1] = queued
      out[#out + 1] = dups[g]
      out[#out + 1] = limited[g]
    end
  end
end

-- The ledgers: new work through ledger_new_work, the other counts as
-- they are. A ledger written by an acknowledgement lives ledger ttl from
-- now; one that only got refusals gets it when it had no expiry.
for j, c in pairs(counts) do
  local k = ledger_keys[j]
  local keys = {KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]}
  local enqueued = c['enqueued'] or 0
  c['enqueued'] = nil
  if enqueued > 0 then
    ledger_new_work(keys, ledger_members[j], 'enqueued', enqueued, stamp, ledger_ttl)
  end
  for field, by in pairs(c) do
    redis.call('HINCRBY', keys[1], field, by)
  end
  if enqueued == 0 then
    redis.call('HSET', keys[1], 'last_activity', stamp)
    if touched[j] then
      redis.call('EXPIRE', keys[1], ledger_ttl)
    elseif redis.call('TTL', keys[1]) < 0 then
      redis.call('EXPIRE', keys[1], ledger_ttl)
    end
  end
end
return out
