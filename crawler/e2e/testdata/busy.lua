-- Holds Redis for ARGV[1] microseconds by Redis's own clock.
-- Returns 0.
local t = redis.call('TIME')
local stop = t[1] * 1000000 + t[2] + tonumber(ARGV[1])
repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] >= stop
return 0
