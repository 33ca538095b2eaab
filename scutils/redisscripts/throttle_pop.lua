-- One atomic throttled pop. Checks the rolling window and the moderation
-- gap, pops one item, and records the hit only when an item was popped.
-- With a lease, the popped item is also recorded as leased, in the same
-- step, so a popper that dies before finishing the item cannot lose it.
-- Go: Pop.
--
-- KEYS[1] queue, KEYS[2] window sorted set, KEYS[3] moderation time key
-- KEYS[4] lease owners sorted set, KEYS[5] lease records hash (only used
-- with a lease)
-- ARGV[1] window seconds        ARGV[2] limit (pops per window)
-- ARGV[3] moderation seconds, 0 = not moderated
-- ARGV[4] "1" when this client's elastic catch-up may break moderation
-- ARGV[5] elastic buffer        ARGV[6] pop command: ZPOPMIN, RPOP or LPOP
-- ARGV[7] unique hit id: the window member (members must differ for
--         concurrent pops; readers only count them, the score is the time)
-- ARGV[8] "1" with a lease, "0" without   ARGV[9] lease id
-- ARGV[10] most items to pop (priority queues, unmoderated throttles only;
--          as many as the window still allows)
-- ARGV[11] the lease's owner (the lease id's first part)
-- ARGV[12] the window's (and moderation key's) expiry: 2 windows, at
--          least a second
-- ARGV[13] "1" for the lean pop of the Redis Cluster layout's keys (ours
--          alone; Pop sends it for them), "0" for the original's keys,
--          whose pop stays as it was
--
-- The lean pop makes the same decisions with fewer commands (a pop is
-- most of a crawled page's commands on a cluster):
--   - the window is trimmed of hits older than the window only when its
--     untrimmed count could deny or shorten the pop (an untrimmed count
--     with room for the pop has it trimmed too), when the pop is
--     moderated (the elastic catch-up reads the count), and besides on
--     about one pop in eight (TIME's microseconds), so that old hits do
--     not pile up; the set never holds more than the limit's hits, as
--     before;
--   - a pop sent again is found when the first item's lease record is
--     written (HSETNX finds it there): what it popped goes back as it
--     was, and the first run's items are answered, as below. A pop that
--     pops nothing (denied, or an empty queue) looks for them first.
--
-- Returns {status, item, wait, score, item2, score2, ...}: status 0 =
-- denied by window, 1 = denied by moderation, 2 = allowed but queue empty,
-- 3 = popped, 4 = the lease's owner was reaped (nothing popped: the
-- popper must go on under a new owner). wait (a string, seconds) is how
-- long a denial will last at least; score (a string) is the popped item's
-- score in a priority queue.
-- Items after the first are leased as "<lease id>:<n>" (n from 2) and
-- their hits are "<hit id>:<n>".
-- Times are the Redis server's clock, so every crawler shares one clock.
local leased = ARGV[8] == '1'
local lean = ARGV[13] == '1'
if leased and not redis.call('ZSCORE', KEYS[4], ARGV[11]) then
  return {4, false, '0'}
end
-- A leased pop under a lease id that holds records already is the same
-- pop sent again: its answer was lost (a connection broken by a Redis
-- restart, say) and the client retried it. Answer what the first run
-- popped, without counting a hit, so that nothing it popped is left
-- leased to nobody, or overwritten by another item's record and lost.
-- again() is that answer, or nil when the lease id holds no record of
-- this queue.
local record_prefix = #KEYS[1] .. ':' .. KEYS[1]
local function again()
  local out, id, n = {}, ARGV[9], 1
  while n <= 1000 do
    local rec = redis.call('HGET', KEYS[5], id)
    if not rec or string.sub(rec, 1, #record_prefix) ~= record_prefix then
      break
    end
    local body = string.sub(rec, #record_prefix + 1)
    local nl = string.find(body, '\n', 1, true)
    if not nl then
      break
    end
    out[#out + 1] = string.sub(body, nl + 1)
    out[#out + 1] = string.sub(body, 1, nl - 1)
    n = n + 1
    id = ARGV[9] .. ':' .. n
  end
  if #out == 0 then
    return nil
  end
  table.insert(out, 1, 3)
  table.insert(out, 3, '0')
  return out
end
-- none is a pop's answer when it pops nothing: the first run's items when
-- a lean pop is sent again (the others looked before).
local function none(answer)
  if lean and leased then
    return again() or answer
  end
  return answer
end
if leased and not lean then
  local first = again()
  if first then
    return first
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local moderation = tonumber(ARGV[3])
local ttl = ARGV[12]
-- now as "<seconds>.<microseconds>", from TIME's text (no sprintf)
local stamp = t[1] .. '.' .. string.rep('0', 6 - #t[2]) .. t[2]

local want = tonumber(ARGV[10]) or 1
if moderation > 0 or ARGV[6] ~= 'ZPOPMIN' then
  want = 1
end
local hits
if lean and moderation == 0 and tonumber(t[2]) % 8 ~= 0 then
  hits = redis.call('ZCARD', KEYS[2])
  if hits + math.max(want, 1) > limit then
    hits = nil
  end
end
if not hits then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  hits = redis.call('ZCARD', KEYS[2])
end
if hits >= limit then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  local wait = window
  if oldest[2] then
    wait = tonumber(oldest[2]) + window - now
  end
  return none({0, false, string.format('%.6f', wait)})
end

if moderation > 0 then
  local last = tonumber(redis.call('GET', KEYS[3])) or 0
  if now - last < moderation then
    local catch_up = ARGV[4] == '1' and (limit - hits) > tonumber(ARGV[5])
    if not catch_up then
      return none({1, false, string.format('%.6f', last + moderation - now)})
    end
  end
end

want = math.max(1, math.min(want, limit - hits))

-- res holds the items and their scores: {item, score, item2, score2, ...}
local res
if ARGV[6] == 'ZPOPMIN' then
  res = redis.call('ZPOPMIN', KEYS[1], want)
else
  local item = redis.call(ARGV[6], KEYS[1])
  res = item and {item, '0'} or {}
end
if #res == 0 then
  return none({2, false, '0'})
end

-- Every write once for the whole batch: one ZADD of the hits, one HSET
-- of the lease records, each "<#queue>:<queue><score>\n<member>"
-- (throttle.Record). The owner's deadline covers every lease it holds.
-- The ids of items after the first end in ":<n>"; written out up to 32
-- (Lua formats a number with sprintf).
local suffixes = {''}
if #res > 2 then
  suffixes = setmetatable({'',':2',':3',':4',':5',':6',':7',':8',':9',':10',':11',':12',':13',':14',':15',':16',':17',':18',':19',':20',':21',':22',':23',':24',':25',':26',':27',':28',':29',':30',':31',':32'},
    {__index = function(_, i) return ':' .. i end})
end
local hits_args, item_args = {}, {}
for i = 1, #res, 2 do
  local suffix = suffixes[(i + 1) / 2]
  hits_args[i], hits_args[i + 1] = stamp, ARGV[7] .. suffix
  if leased then
    item_args[i], item_args[i + 1] = ARGV[9] .. suffix, record_prefix .. res[i + 1] .. '\n' .. res[i]
  end
end
-- The lean pop writes its first record only if the lease id has none: one
-- that has is the same pop sent again. What it popped goes back as it was
-- (the same members at the same scores; a list's item at the end it left)
-- and the first run's items are answered; a record of another queue under
-- the id is overwritten, as the original pop does.
local written = 0
if leased and lean then
  if redis.call('HSETNX', KEYS[5], item_args[1], item_args[2]) == 0 then
    local first = again()
    if first then
      if ARGV[6] == 'ZPOPMIN' then
        local back = {}
        for i = 1, #res, 2 do
          back[i], back[i + 1] = res[i + 1], res[i]
        end
        redis.call('ZADD', KEYS[1], unpack(back))
      elseif ARGV[6] == 'RPOP' then
        redis.call('RPUSH', KEYS[1], res[1])
      else
        redis.call('LPUSH', KEYS[1], res[1])
      end
      return first
    end
  else
    written = 2
  end
end
redis.call('ZADD', KEYS[2], unpack(hits_args))
if leased and #item_args > written then
  redis.call('HSET', KEYS[5], unpack(item_args, written + 1))
end
redis.call('EXPIRE', KEYS[2], ttl)
if moderation > 0 then
  redis.call('SET', KEYS[3], stamp, 'EX', ttl)
end
-- {3, item, '0', score, item2, score2, ...}
table.insert(res, 1, 3)
table.insert(res, 3, '0')
return res
