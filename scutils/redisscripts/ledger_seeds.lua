-- Queues many seeds at once, as ledger_seed does for each: a seed is
-- queued unless its queue held the member already, and each crawl's
-- ledger is written once, counting the seeds of it that were queued.
-- Seeds go in groups of one queue and one crawl, queued by one ZADD, whose
-- count of members added is the group's count of new seeds; the groups
-- are runs of the batch's seeds in the batch's order, so that seeds of one
-- priority come out of a queue in that order (fifo_score). A script's
-- writes are not undone when it fails half-way, so every key's type is
-- checked before the first write: a key of another type fails the whole
-- script, with nothing queued and nothing counted. Go: Seeds.
-- include: ledger_new_work
-- include: fifo_score
--
-- KEYS: the queues (nq of them), then per crawl its ledger's four keys
-- (ledger_new_work's)
-- ARGV[1] stamp, ARGV[2] the ledgers' ttl (seconds), ARGV[3] nq, ARGV[4]
-- nc, the number of crawls, ARGV[5..4+nc] the crawls' index members, then
-- per group: its queue's number (1..nq), its crawl's number (1..nc), its
-- number of seeds n, then n pairs of score (-priority: fifo_score adds
-- the tiebreak) and member.
--
-- Returns how many seeds were queued.
local nq, nc = tonumber(ARGV[3]), tonumber(ARGV[4])
for k = 1, nq + 4 * nc do
  local want = 'zset'
  if k > nq and (k - nq) % 4 == 1 then
    want = 'hash'
  end
  local t = redis.call('TYPE', KEYS[k])['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE ' .. KEYS[k] .. ' holds a ' .. t .. ', not a ' .. want .. ': no seed queued')
  end
end
local counts, queued, fifo = {}, 0, {}
local i = 5 + nc
while i <= #ARGV do
  local queue, c, n = KEYS[tonumber(ARGV[i])], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local z = {'NX'}
  for j = i + 3, i + 2 + 2 * n, 2 do
    z[#z + 1] = fifo_score(fifo, queue, ARGV[j])
    z[#z + 1] = ARGV[j + 1]
  end
  local added = redis.call('ZADD', queue, unpack(z))
  counts[c] = (counts[c] or 0) + added
  queued = queued + added
  i = i + 3 + 2 * n
end
for c = 1, nc do
  if counts[c] and counts[c] > 0 then
    local k = nq + 4 * (c - 1)
    ledger_new_work({KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4]}, ARGV[4 + c], 'seeds', counts[c], ARGV[1], ARGV[2])
  end
end
return queued
