-- Reads, in one atomic step, what a crawl's ledger says is left (seeds +
-- enqueued - done) and what really is: the crawl's members in every queue
-- of the spider and in the spider's lease records.
-- include: lease_record
--
-- KEYS[1] the crawl's ledger hash, KEYS[2] the lease records hash
-- ARGV[1] the spider's queue pattern, ARGV[2] appid, ARGV[3] crawlid
--
-- Returns {left, queued, leased}.
local v = redis.call('HMGET', KEYS[1], 'seeds', 'enqueued', 'done')
local left = (tonumber(v[1]) or 0) + (tonumber(v[2]) or 0) - (tonumber(v[3]) or 0)
local function ours(member)
  local ok, r = pcall(cjson.decode, member)
  if not ok or type(r) ~= 'table' then return false end
  if r.appid == nil and type(r.meta) == 'table' then r = r.meta end
  return r.appid == ARGV[2] and r.crawlid == ARGV[3]
end
local queued = 0
for _, q in ipairs(redis.call('KEYS', ARGV[1])) do
  for _, m in ipairs(redis.call('ZRANGE', q, 0, -1)) do
    if ours(m) then queued = queued + 1 end
  end
end
local leased = 0
for _, rec in ipairs(redis.call('HVALS', KEYS[2])) do
  local _, _, m = lease_record(rec)
  if ours(m) then leased = leased + 1 end
end
return {left, queued, leased}
