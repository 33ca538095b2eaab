-- finish_batch(KEYS, ARGV) is finish.lua's work on one batch: KEYS and
-- ARGV as finish.lua's header says (its parameters stand for Redis's
-- globals of the same names), and it returns finish.lua's answer. A
-- script runs it once (finish.lua) or for each of several batches
-- (finish_node.lua, each batch's keys in one slot of one node). It uses
-- ledger_new_work, fifo_score and bloom_filter: a script including it
-- includes them first.
local function finish_batch(KEYS, ARGV)
  local batch = cjson.decode(ARGV[1])

  -- counts[j][field] = n, for ledger j; touched[j]: written by an
  -- acknowledgement (its expiry is refreshed); estimates[j] its false drops
  -- estimate
  local counts, touched, estimates = {}, {}, {}
  local function count(j, field, by)
    if by == 0 then return end
    local c = counts[j]
    if not c then
      c = {}
      counts[j] = c
    end
    c[field] = (c[field] or 0) + by
  end

  -- call runs a command taking many arguments after its key (and flag,
  -- when given) in chunks, as Lua's unpack takes a few thousand values at
  -- most; it returns the replies concatenated when they are arrays, summed
  -- when numbers.
  local function call(cmd, key, args, flag)
    local out, sum = {}, 0
    for i = 1, #args, 1000 do
      local res
      if flag then
        res = redis.call(cmd, key, flag, unpack(args, i, math.min(i + 999, #args)))
      else
        res = redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
      end
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

  -- end_leases ends the acknowledgements' leases: an owner gone was reaped
  -- with all its leases. The others end now, with one HDEL for those sent
  -- for the first time; one sent again may have ended its lease before, and
  -- is looked at alone. It returns each one's state, in the batch's order,
  -- and the ids of those that ended now.
  local function end_leases(groups)
    local states, finished = {}, {}
    if #groups == 0 then
      return states, finished
    end
    local owners = {}
    for g, grp in ipairs(groups) do
      owners[g] = grp.owner
    end
    local scores = redis.call('ZMSCORE', KEYS[1], unpack(owners))
    local ids = {}
    for g, grp in ipairs(groups) do
      local alive, ended = scores[g] ~= false, 0
      for _, id in ipairs(grp.ids) do
        local now
        if not grp.again then
          now = alive
          if now then ids[#ids + 1] = id end
        else
          now = redis.call('HDEL', KEYS[2], id) == 1
        end
        if now then
          states[#states + 1], finished[id] = 0, true
          ended = ended + 1
        elseif alive then
          states[#states + 1] = 2
        else
          states[#states + 1] = 1
        end
      end
      if grp.tally and ended > 0 then
        for _, f in ipairs(batch.tallies[grp.tally]) do
          count(f.ledger, f.field, f.n * ended)
          touched[f.ledger] = true
        end
      end
    end
    if #ids > 0 then
      call('HDEL', KEYS[2], ids)
    end
    return states, finished
  end

  -- limited applies a group's page limits to one new request, the
  -- counters' expiry refreshed as the original does; true when a limit
  -- stops it.
  local function limited(grp)
    if grp.dmax > 0 then
      local key = KEYS[grp.dmax_key]
      local pages = tonumber(redis.call('GET', key)) or 0
      if pages >= grp.dmax then
        redis.call('EXPIRE', key, batch.domain_max_page_ttl)
        return true
      end
      pages = redis.call('INCR', key)
      redis.call('EXPIRE', key, batch.domain_max_page_ttl)
      if pages >= grp.dmax then return true end
    end
    local limit = batch.global_page_limit
    if limit > 0 then
      local key = KEYS[grp.global_key]
      local pages = tonumber(redis.call('GET', key)) or 0
      if pages >= limit then return true end
      pages = redis.call('INCR', key)
      redis.call('EXPIRE', key, batch.global_page_ttl)
      if pages >= limit then return true end
    end
    return false
  end

  local existed = {} -- by queue key number: EXISTS before the first ZADD
  local blooms = {} -- the compact filters, by meta key number
  local fifo = {} -- fifo_score's bands

  -- queue_page queues a page's requests, request i of group req_group[i]
  -- with fingerprint fps[i] and member members[i], and returns the page's
  -- result.
  local function queue_page(page, req_group, fps, members)
    local groups, n = page.groups, #fps
    if page.blacklist and redis.call('SISMEMBER', KEYS[page.blacklist], page.crawl) == 1 then
      for i = 1, n do
        count(groups[req_group[i]].ledger, 'refused:crawl_blacklisted', 1)
      end
      return {-1}
    end
    -- The duplicate filter: the page is seen, and so is a link met earlier
    -- on the same page.
    local dupe_key = KEYS[page.dupefilter]
    local bloom, known, fp_odds = nil, {}, 0
    if page.bloom then
      bloom = blooms[page.bloom]
      if not bloom then
        bloom = bloom_filter(dupe_key, KEYS[page.bloom], batch.bloom_rate, batch.bloom_capacity)
        blooms[page.bloom] = bloom
      end
      if n > 0 then
        known = bloom.seen(fps)
        local p = math.min(bloom.fp(), 0.5)
        fp_odds = p / (1 - p)
      end
    elseif n > 0 then
      known = call('SMISMEMBER', dupe_key, fps)
    end
    local seen, added = {}, {}
    if page.fingerprint then
      seen[page.fingerprint] = true
      added[1] = page.fingerprint
    end
    local new, dups, limits = {}, {}, {}
    for g = 1, #groups do
      dups[g], limits[g] = 0, 0
    end
    for i = 1, n do
      local g, fp = req_group[i], fps[i]
      if known[i] == 1 or seen[fp] then
        dups[g] = dups[g] + 1
      else
        new[i] = true
        seen[fp] = true
        added[#added + 1] = fp
        if fp_odds > 0 then
          local j = groups[g].ledger
          estimates[j] = (estimates[j] or 0) + fp_odds
        end
      end
    end
    if bloom then
      if #added > 0 then
        bloom.add(added)
      end
    elseif #added > 0 then
      call('SADD', dupe_key, added)
    end
    if not bloom and (#added > 0 or n > 0) then
      redis.call('EXPIRE', dupe_key, batch.dupefilter_ttl)
    end
    -- The page limits, request by request, in the page's order.
    for i = 1, n do
      local g = req_group[i]
      if new[i] and groups[g].dmax_key and limited(groups[g]) then
        new[i] = nil
        limits[g] = limits[g] + 1
      end
    end
    -- The queues: each group with one ZADD NX (a member queued already
    -- keeps its place), at fifo_score's scores in the page's order; each
    -- queue checked once for being new.
    local zadds = {}
    for i = 1, n do
      if new[i] then
        local g = req_group[i]
        local z = zadds[g]
        if not z then
          z = {}
          zadds[g] = z
        end
        z[#z + 1] = fifo_score(fifo, KEYS[groups[g].queue], groups[g].score)
        z[#z + 1] = members[i]
      end
    end
    local out = {1}
    for g, grp in ipairs(groups) do
      local queued = 0
      local z = zadds[g]
      if z then
        local queue = KEYS[grp.queue]
        if existed[grp.queue] == nil then
          existed[grp.queue] = redis.call('EXISTS', queue)
          if existed[grp.queue] == 0 then
            redis.call('PUBLISH', grp.channel, queue)
          end
        end
        local _, n_added = call('ZADD', queue, z, 'NX')
        queued = n_added
        dups[g] = dups[g] + #z / 2 - queued
      end
      count(grp.ledger, 'enqueued', queued)
      count(grp.ledger, 'refused:duplicate', dups[g])
      count(grp.ledger, 'refused:page_limit', limits[g])
      out[#out + 1] = queued
      out[#out + 1] = dups[g]
      out[#out + 1] = limits[g]
    end
    return out
  end

  local acks, finished = end_leases(batch.acks)
  local pages = {}
  local at = 2 -- the next request in ARGV
  for p, page in ipairs(batch.pages) do
    local req_group, fps, members = {}, {}, {}
    for g, grp in ipairs(page.groups) do
      for _ = 1, grp.requests do
        req_group[#req_group + 1] = g
        fps[#fps + 1], members[#members + 1] = ARGV[at], ARGV[at + 1]
        at = at + 2
      end
    end
    if page.lease and not finished[page.lease] then
      pages[p] = {0}
    else
      for _, r in ipairs(page.refused or {}) do
        count(r.ledger, 'refused:' .. r.reason, r.n)
      end
      pages[p] = queue_page(page, req_group, fps, members)
    end
  end

  -- The ledgers: new work through ledger_new_work, the other counts as
  -- they are. A ledger written by an acknowledgement lives ledger ttl from
  -- now; one that only got refusals gets it when it had no expiry.
  for j, c in pairs(counts) do
    local ledger = batch.ledgers[j]
    local k = ledger.keys
    local keys = {KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]}
    local enqueued = c['enqueued'] or 0
    c['enqueued'] = nil
    if enqueued > 0 then
      ledger_new_work(keys, ledger.member, 'enqueued', enqueued, batch.stamp, batch.ledger_ttl)
    end
    for field, by in pairs(c) do
      redis.call('HINCRBY', keys[1], field, by)
    end
    if estimates[j] then
      redis.call('HINCRBYFLOAT', keys[1], 'dupefilter_false_drops_estimate', string.format('%.17g', estimates[j]))
    end
    if enqueued == 0 then
      redis.call('HSET', keys[1], 'last_activity', batch.stamp)
      if touched[j] then
        redis.call('EXPIRE', keys[1], batch.ledger_ttl)
      elseif redis.call('TTL', keys[1]) < 0 then
        redis.call('EXPIRE', keys[1], batch.ledger_ttl)
      end
    end
  end
  for _, bloom in pairs(blooms) do
    bloom.save(batch.dupefilter_ttl)
  end
  return {acks, pages}
end
