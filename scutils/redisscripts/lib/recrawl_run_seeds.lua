-- recrawl_run_seeds(keys, base, nq, args, from, channel) queues a run's
-- seeds: args[from..] are triples (the seed's queue's number q, 1..nq,
-- its score, -priority, and its member), the queue being keys[base + q];
-- each queue is then announced on channel. Returns how many seeds went in
-- (ZADD NX). Needs fifo_score.
local function recrawl_run_seeds(keys, base, nq, args, from, channel)
  local queued, fifo = 0, {}
  for i = from, #args, 3 do
    local queue = keys[base + tonumber(args[i])]
    queued = queued + redis.call('ZADD', queue, 'NX', fifo_score(fifo, queue, args[i + 1]), args[i + 2])
  end
  for q = 1, nq do
    redis.call('PUBLISH', channel, keys[base + q])
  end
  return queued
end
