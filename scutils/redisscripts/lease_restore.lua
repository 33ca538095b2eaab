-- Puts leased items back in their queues: with ARGV[1] 'expired', up to
-- ARGV[2] leases of the earlier form (one sorted-set entry per lease,
-- scored by its deadline) past their deadline; with 'ids', the leases
-- ARGV[2..]. Go: LeaseRestore.
-- include: lease_record
--
-- KEYS[1] the earlier form's sorted set (leases:<spiderid>), KEYS[2] the
-- lease records hash
-- ARGV[1] 'expired' or 'ids', then the most leases, or the lease ids
--
-- Returns how many items it put back.
local ids
if ARGV[1] == 'expired' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
  ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.6f', now), 'LIMIT', 0, tonumber(ARGV[2]))
else
  ids = {}
  for i = 2, #ARGV do ids[#ids + 1] = ARGV[i] end
end
local n = 0
for _, id in ipairs(ids) do
  local v = redis.call('HGET', KEYS[2], id)
  if v then
    local q, s, m = lease_record(v)
    redis.call('ZADD', q, s, m)
    n = n + 1
  end
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
end
return n
