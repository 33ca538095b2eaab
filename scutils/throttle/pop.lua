-- One atomic throttled pop. Checks the rolling window and the moderation
-- gap, pops one item, and records the hit only when an item was popped.
-- With a lease, the popped item is also recorded as leased, in the same
-- step, so a popper that dies before finishing the item cannot lose it.
--
-- KEYS[1] queue, KEYS[2] window sorted set, KEYS[3] moderation time key
-- KEYS[4] lease sorted set, KEYS[5] lease hash (only used with a lease)
-- ARGV[1] window seconds        ARGV[2] limit (pops per window)
-- ARGV[3] moderation seconds, 0 = not moderated
-- ARGV[4] "1" when this client's elastic catch-up may break moderation
-- ARGV[5] elastic buffer        ARGV[6] pop command: ZPOPMIN, RPOP or LPOP
-- ARGV[7] unique hit id: the window member (members must differ for
--         concurrent pops; readers only count them, the score is the time)
-- ARGV[8] lease seconds, 0 = no lease   ARGV[9] lease id
-- ARGV[10] most items to pop (priority queues, unmoderated throttles only;
--          as many as the window still allows)
--
-- Returns {status, item, wait, score, item2, score2, ...}: status 0 =
-- denied by window, 1 = denied by moderation, 2 = allowed but queue empty,
-- 3 = popped. wait (a string, seconds) is how long a denial will last at
-- least; score (a string) is the popped item's score in a priority queue.
-- Items after the first are leased as "<lease id>:<n>" (n from 2) and
-- their hits are "<hit id>:<n>".
-- Times are the Redis server's clock, so every crawler shares one clock.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local moderation = tonumber(ARGV[3])
local ttl = math.max(1, math.floor(window * 2))
local stamp = string.format('%.6f', now)

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
local hits = redis.call('ZCARD', KEYS[2])
if hits >= limit then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  local wait = window
  if oldest[2] then
    wait = tonumber(oldest[2]) + window - now
  end
  return {0, false, string.format('%.6f', wait)}
end

if moderation > 0 then
  local last = tonumber(redis.call('GET', KEYS[3])) or 0
  if now - last < moderation then
    local catch_up = ARGV[4] == '1' and (limit - hits) > tonumber(ARGV[5])
    if not catch_up then
      return {1, false, string.format('%.6f', last + moderation - now)}
    end
  end
end

local want = tonumber(ARGV[10]) or 1
if moderation > 0 or ARGV[6] ~= 'ZPOPMIN' then
  want = 1
end
want = math.max(1, math.min(want, limit - hits))

local popped = {}
if ARGV[6] == 'ZPOPMIN' then
  local res = redis.call('ZPOPMIN', KEYS[1], want)
  for i = 1, #res, 2 do
    popped[#popped + 1] = {res[i], res[i + 1]}
  end
else
  local item = redis.call(ARGV[6], KEYS[1])
  if item then
    popped[1] = {item, '0'}
  end
end
if #popped == 0 then
  return {2, false, '0'}
end

local lease = tonumber(ARGV[8])
-- Every write once for the whole batch: one ZADD of the hits, one ZADD and
-- one HSET of the leases.
-- Each item's lease record (throttle.Record): "<#queue>:<queue><score>\n<member>".
local hits_args, lease_args, item_args = {}, {}, {}
local record_prefix = #KEYS[1] .. ':' .. KEYS[1]
local deadline = string.format('%.6f', now + lease)
local out = {3}
for i, p in ipairs(popped) do
  local suffix = ''
  if i > 1 then
    suffix = ':' .. i
  end
  hits_args[#hits_args + 1] = stamp
  hits_args[#hits_args + 1] = ARGV[7] .. suffix
  if lease > 0 then
    lease_args[#lease_args + 1] = deadline
    lease_args[#lease_args + 1] = ARGV[9] .. suffix
    item_args[#item_args + 1] = ARGV[9] .. suffix
    item_args[#item_args + 1] = record_prefix .. p[2] .. '\n' .. p[1]
  end
  if i == 1 then
    out[2], out[3], out[4] = p[1], '0', p[2]
  else
    out[#out + 1] = p[1]
    out[#out + 1] = p[2]
  end
end
redis.call('ZADD', KEYS[2], unpack(hits_args))
if lease > 0 then
  redis.call('ZADD', KEYS[4], unpack(lease_args))
  redis.call('HSET', KEYS[5], unpack(item_args))
end
redis.call('EXPIRE', KEYS[2], ttl)
if moderation > 0 then
  redis.call('SET', KEYS[3], stamp, 'EX', ttl)
end
return out
