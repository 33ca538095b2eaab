-- recrawl_schedule_join(schedule, due, member, stamp, every, runs, emit,
-- adaptive, expires, field, kept) keeps a seed of a scheduled crawl (its
-- field 'seed:<url>' = kept) in the crawl's schedule hash, making the
-- schedule when the crawl has no live one: run 1 starts now (stamp), run
-- 2 is due every seconds later in the sorted set due (none when runs is
-- 1). Returns true when it made the schedule.
local function recrawl_schedule_join(schedule, due, member, stamp, every, runs, emit, adaptive, expires, field, kept)
  local made = false
  if redis.call('HGET', schedule, 'state') ~= 'active' then
    redis.call('DEL', schedule)
    redis.call('HSET', schedule, 'state', 'active', 'every', every, 'runs', runs, 'emit', emit,
      'adaptive', adaptive, 'expires', expires, 'runs_started', '1', 'run_started_at', stamp)
    if tonumber(runs) ~= 1 then
      local at = string.format('%.3f', tonumber(stamp) + tonumber(every))
      redis.call('HSET', schedule, 'next_run_at', at)
      redis.call('ZADD', due, at, member)
    end
    made = true
  end
  redis.call('HSET', schedule, field, kept)
  return made
end
