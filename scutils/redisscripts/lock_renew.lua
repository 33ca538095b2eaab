-- Extends a Redis Monitor's lock on a request only while it still holds
-- it (python-redis-lock's protocol: the lock's value is its holder's
-- token). Go: LockRenew.
--
-- KEYS[1] the lock (lock:<key>)
-- ARGV[1] the holder's token, ARGV[2] the lock's new expiry (milliseconds)
--
-- Returns 1 when extended, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
