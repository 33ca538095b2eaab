-- Removes a request the Redis Monitor handled, only if it still holds the
-- value that was handled (a newer request under the same key stays), and
-- the count of its failed attempts. Go: RequestDelete.
--
-- KEYS[1] the request's key, KEYS[2] its failures (lock:<key>:failures)
-- ARGV[1] the value handled
--
-- Returns 1.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
redis.call('DEL', KEYS[2])
return 1
