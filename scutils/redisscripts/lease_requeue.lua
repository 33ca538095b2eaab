-- Swaps a lease for a new queued item, only while the lease is held: a
-- lease already reaped had its item put back in its queue, and queueing
-- the retry as well would crawl it twice. The retry goes behind the
-- requests of its priority queued before it (fifo_score), as a new
-- request does. Go: LeaseRequeue.
-- include: fifo_score
--
-- KEYS[1] the lease records hash (leases:<spiderid>:items), KEYS[2] the
-- queue
-- ARGV[1] the lease id, ARGV[2] score (-priority), ARGV[3] member
--
-- Returns 1 when the lease was held (and member queued), else 0.
local held = redis.call('HDEL', KEYS[1], ARGV[1])
if held == 1 then
  redis.call('ZADD', KEYS[2], 'NX', fifo_score({}, KEYS[2], ARGV[2]), ARGV[3])
end
return held
