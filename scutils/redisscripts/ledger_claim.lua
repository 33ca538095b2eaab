-- Claims a finished crawl for publishing its crawl-complete: nothing
-- outstanding, no new work since the quiet period began (the crawl's score
-- in ledger:active is the stamp of its last seed or follow-up queued,
-- ledger_new_work's) unless a stop or an expire ended it, not completed
-- yet, and no live claim by another monitor. A crawl without a ledger, or
-- already completed, leaves the active set.
-- Go: Claim.
--
-- KEYS[1] the crawl's ledger hash, KEYS[2] ledger:active
-- ARGV[1] the crawl's index member, ARGV[2] now (epoch seconds), ARGV[3]
-- the claim, "<owner>|<deadline>", ARGV[4] the start of the quiet period
-- (epoch seconds: now - LEDGER_COMPLETE_QUIET)
--
-- Returns the ledger (HGETALL) when claimed, else false (nil).
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return false
end
local v = redis.call('HMGET', KEYS[1], 'seeds', 'enqueued', 'done', 'completed', 'completing', 'ended_by')
if (tonumber(v[1]) or 0) + (tonumber(v[2]) or 0) ~= (tonumber(v[3]) or 0) then
  return false
end
if not v[4] and not v[6] then
  local last = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
  if last and last > tonumber(ARGV[4]) then
    return false
  end
end
if v[4] then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return false
end
if v[5] then
  local deadline = tonumber(string.match(v[5], '|(.*)$'))
  if deadline and deadline > tonumber(ARGV[2]) then
    return false
  end
end
redis.call('HSET', KEYS[1], 'completing', ARGV[3])
return redis.call('HGETALL', KEYS[1])
