-- Starts run n of a scheduled crawl, once however many Redis Monitors try:
-- only while its schedule is live, run n-1 is the last one started
-- (runs_started = n-1), run n is due, and run n-1 has completed (its
-- crawl-complete is out). Run n-1's ledger is kept in the runs hash (its
-- fields sorted, one line each for name and value), the crawl's ledger
-- starts afresh with run n's seeds, the duplicate filter and the other
-- keys named are dropped so every page is reachable again, and run n+1 is
-- due every seconds from now (none once runs have started). A schedule
-- whose expires has passed ends instead. Go: RecrawlStart.
-- include: ledger_new_work
-- include: fifo_score
--
-- KEYS[1] the schedule hash, KEYS[2] recrawl:due, KEYS[3..6] the crawl's
-- ledger (ledger_new_work's keys), KEYS[7] the crawl's runs hash, KEYS[8..]
-- the seeds' queues (nq of them), then the keys to drop (the duplicate
-- filter, page-limit counters)
-- ARGV[1] the crawl's index member, ARGV[2] now (stamp), ARGV[3] n,
-- ARGV[4] the ledger's ttl (seconds), ARGV[5] the queue announcement
-- channel, ARGV[6] the most past runs kept, ARGV[7] nq, then per seed its
-- queue's number (1..nq), score (-priority: fifo_score adds the
-- tiebreak) and member
--
-- Returns 'started', or why not: 'ended' (no live schedule), 'moved'
-- (runs_started is not n-1: another monitor started run n), 'early' (not
-- due), 'busy' (run n-1 has not completed: looked at again in a second),
-- 'expired' (the schedule ended now) or 'over' (every run has started).
local s = redis.call('HMGET', KEYS[1], 'state', 'runs_started', 'next_run_at', 'runs', 'every', 'expires')
local now, n = tonumber(ARGV[2]), tonumber(ARGV[3])
if s[1] ~= 'active' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 'ended'
end
if tonumber(s[2]) ~= n - 1 then
  return 'moved'
end
local runs = tonumber(s[4]) or 0
if not s[3] or (runs > 0 and n > runs) then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 'over'
end
if now < tonumber(s[3]) then
  return 'early'
end
local expires = tonumber(s[6]) or 0
if expires > 0 and now >= expires then
  redis.call('HSET', KEYS[1], 'state', 'ended', 'ended_by', 'expire')
  redis.call('HDEL', KEYS[1], 'next_run_at')
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('EXPIRE', KEYS[1], ARGV[4])
  return 'expired'
end
if redis.call('EXISTS', KEYS[3]) == 1 and not redis.call('HGET', KEYS[3], 'completed') then
  redis.call('ZADD', KEYS[2], string.format('%.3f', now + 1), ARGV[1])
  return 'busy'
end
-- Keep run n-1's ledger, then start afresh.
local h = redis.call('HGETALL', KEYS[3])
if #h > 0 then
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
  redis.call('HSET', KEYS[7], tostring(n - 1), table.concat(lines, '\n'))
  local old = n - 1 - tonumber(ARGV[6])
  if old >= 1 then
    redis.call('HDEL', KEYS[7], tostring(old))
  end
  redis.call('EXPIRE', KEYS[7], ARGV[4])
end
redis.call('DEL', KEYS[3])
local nq = tonumber(ARGV[7])
for k = 8 + nq, #KEYS do
  redis.call('DEL', KEYS[k])
end
local queued, fifo = 0, {}
for i = 8, #ARGV, 3 do
  local queue = KEYS[7 + tonumber(ARGV[i])]
  queued = queued + redis.call('ZADD', queue, 'NX', fifo_score(fifo, queue, ARGV[i + 1]), ARGV[i + 2])
end
ledger_new_work({KEYS[3], KEYS[4], KEYS[5], KEYS[6]}, ARGV[1], 'seeds', queued, ARGV[2], ARGV[4])
redis.call('HSET', KEYS[3], 'run', tostring(n))
for q = 1, nq do
  redis.call('PUBLISH', ARGV[5], KEYS[7 + q])
end
redis.call('HSET', KEYS[1], 'runs_started', tostring(n), 'run_started_at', ARGV[2])
if runs > 0 and n >= runs then
  redis.call('HDEL', KEYS[1], 'next_run_at')
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('EXPIRE', KEYS[1], ARGV[4])
else
  local due = string.format('%.3f', now + tonumber(s[5]))
  redis.call('HSET', KEYS[1], 'next_run_at', due)
  redis.call('ZADD', KEYS[2], due, ARGV[1])
end
return 'started'
