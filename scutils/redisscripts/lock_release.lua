-- Deletes a Redis Monitor's lock on a request only while it still holds
-- it. Go: LockRelease.
--
-- KEYS[1] the lock (lock:<key>)
-- ARGV[1] the holder's token
--
-- Returns 1 when deleted, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
