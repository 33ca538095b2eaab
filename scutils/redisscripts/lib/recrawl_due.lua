-- The checks and the schedule's bookkeeping of a run's start, shared by
-- recrawl_start.lua (one Redis) and recrawl_cluster_claim.lua (Redis
-- Cluster).
--
-- recrawl_due(schedule, due, member, now, n, ttl) checks that run n of the
-- schedule may start now: it returns nil and the schedule's fields
-- {state, runs_started, next_run_at, runs, every, expires}, or why not:
-- 'ended' (no live schedule), 'moved' (runs_started is not n-1), 'over'
-- (every run has started), 'early' (not due) or 'expired' (the schedule
-- ends now: expires has passed). 'ended', 'over' and 'expired' take the
-- crawl off the due set.
local function recrawl_due(schedule, due, member, now, n, ttl)
  local s = redis.call('HMGET', schedule, 'state', 'runs_started', 'next_run_at', 'runs', 'every', 'expires')
  if s[1] ~= 'active' then
    redis.call('ZREM', due, member)
    return 'ended', s
  end
  if tonumber(s[2]) ~= n - 1 then
    return 'moved', s
  end
  local runs = tonumber(s[4]) or 0
  if not s[3] or (runs > 0 and n > runs) then
    redis.call('ZREM', due, member)
    return 'over', s
  end
  if now < tonumber(s[3]) then
    return 'early', s
  end
  local expires = tonumber(s[6]) or 0
  if expires > 0 and now >= expires then
    redis.call('HSET', schedule, 'state', 'ended', 'ended_by', 'expire')
    redis.call('HDEL', schedule, 'next_run_at')
    redis.call('ZREM', due, member)
    redis.call('EXPIRE', schedule, ttl)
    return 'expired', s
  end
  return nil, s
end

-- recrawl_begun(schedule, due, member, now, stamp, n, s, ttl) records that
-- run n started at stamp (s: recrawl_due's fields) and sets run n+1 due
-- every seconds from now, or, once every run has started, no run to come
-- (the schedule then expires ttl later).
local function recrawl_begun(schedule, due, member, now, stamp, n, s, ttl)
  local runs = tonumber(s[4]) or 0
  redis.call('HSET', schedule, 'runs_started', tostring(n), 'run_started_at', stamp)
  if runs > 0 and n >= runs then
    redis.call('HDEL', schedule, 'next_run_at')
    redis.call('ZREM', due, member)
    redis.call('EXPIRE', schedule, ttl)
  else
    local at = string.format('%.3f', now + tonumber(s[5]))
    redis.call('HSET', schedule, 'next_run_at', at)
    redis.call('ZADD', due, at, member)
  end
end
