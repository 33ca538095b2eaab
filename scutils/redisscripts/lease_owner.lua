-- Writes a lease owner's deadline, now + ttl seconds by the Redis
-- server's clock, rounded up to whole seconds: when registering, whether
-- or not it has one; when renewing, only when it has one (an owner that
-- has none was reaped, and its leases are queued again). Go: LeaseOwner.
--
-- KEYS[1] the owners' sorted set (leases:<spiderid>:owners)
-- ARGV[1] ttl (seconds), ARGV[2] the owner, ARGV[3] 'register' or 'renew'
--
-- Returns 1 when written, 0 for an owner reaped meanwhile.
if ARGV[3] == 'renew' and not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  return 0
end
local t = redis.call('TIME')
local deadline = string.format('%d', math.ceil(tonumber(t[1]) + tonumber(t[2]) / 1000000 + tonumber(ARGV[1])))
redis.call('ZADD', KEYS[1], deadline, ARGV[2])
return 1
