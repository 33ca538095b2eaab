-- Puts the leases of owners past their deadline back in their queues, up
-- to ARGV[1] owners, and removes the owners. The leases of an owner are the
-- fields "<owner>:*" of the records hash. Go: LeaseReap.
-- include: lease_record
--
-- KEYS[1] the owners' sorted set, KEYS[2] the lease records hash
-- ARGV[1] the most owners to reap
--
-- Returns how many items it put back.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local owners = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.6f', now), 'LIMIT', 0, tonumber(ARGV[1]))
local n = 0
for _, owner in ipairs(owners) do
  local cursor = '0'
  repeat
    local page = redis.call('HSCAN', KEYS[2], cursor, 'MATCH', owner .. ':*', 'COUNT', 1000)
    cursor = page[1]
    local fields = page[2]
    for i = 1, #fields, 2 do
      local q, s, m = lease_record(fields[i + 1])
      redis.call('ZADD', q, s, m)
      redis.call('HDEL', KEYS[2], fields[i])
      n = n + 1
    end
  until cursor == '0'
  redis.call('ZREM', KEYS[1], owner)
end
return n
