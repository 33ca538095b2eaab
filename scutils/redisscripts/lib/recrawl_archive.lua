-- recrawl_archive(ledger, runs, run, kept, ttl) keeps a ledger hash (a
-- crawl's, or in Redis Cluster mode one domain's share of it) as run's
-- entry of the runs hash when the next run starts: its fields sorted, one
-- line each for a field's name and value; the entry kept runs before is
-- dropped, and the runs hash expires ttl (seconds) later. Nothing is kept
-- for a ledger that does not exist.
local function recrawl_archive(ledger, runs, run, kept, ttl)
  local h = redis.call('HGETALL', ledger)
  if #h == 0 then
    return
  end
  local names, vals = {}, {}
  for i = 1, #h, 2 do
    names[#names + 1] = h[i]
    vals[h[i]] = h[i + 1]
  end
  table.sort(names)
  local lines = {}
  for _, k in ipairs(names) do
    lines[#lines + 1] = k
    lines[#lines + 1] = vals[k]
  end
  redis.call('HSET', runs, tostring(run), table.concat(lines, '\n'))
  local old = run - tonumber(kept)
  if old >= 1 then
    redis.call('HDEL', runs, tostring(old))
  end
  redis.call('EXPIRE', runs, ttl)
end
