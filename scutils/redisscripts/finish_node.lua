-- Finishes several batches of finish.lua (Finish) in one run on one Redis
-- Cluster node: a crawler's acknowledgements and follow-ups of many
-- domains, each batch's keys in one slot, the batches of every slot the
-- node serves together (docs/redis-cluster.md). Go: FinishNode.
-- flags: allow-cross-slot-keys
-- include: ledger_new_work
-- include: fifo_score
-- include: bloom_filter
-- include: finish_batch
--
-- Redis (7.0) checks that a script's declared keys share one slot,
-- whatever its flags; allow-cross-slot-keys lets the script use keys of
-- other slots that this node serves. So only the first batch's first key
-- is declared (its slot routes the run to its node), and every batch's
-- keys are passed among the arguments.
--
-- KEYS[1] the first batch's first key.
-- ARGV[1] the batches' sizes, a JSON array of [keys, args] per batch:
-- how many keys and how many arguments it has (finish.lua's KEYS and
-- ARGV). ARGV[2..] per batch its keys, then its arguments.
--
-- Before it writes anything, the script makes sure this node serves every
-- key of every batch now: one EXISTS of a batch's keys through
-- redis.pcall per batch (a key of a slot served elsewhere, or of a slot
-- being migrated away and no longer here, is an error it catches). When
-- one does not, nothing is written.
--
-- Returns {0, the error} when a key is not served here; otherwise {1,
-- then per batch finish.lua's answer}.
local sizes = cjson.decode(ARGV[1])
local batches, at = {}, 2
for b, size in ipairs(sizes) do
  local keys, args = {}, {}
  for i = 1, size[1] do
    keys[i] = ARGV[at]
    at = at + 1
  end
  for i = 1, size[2] do
    args[i] = ARGV[at]
    at = at + 1
  end
  for i = 1, #keys, 1000 do
    local r = redis.pcall('EXISTS', unpack(keys, i, math.min(i + 999, #keys)))
    if type(r) == 'table' and r.err then
      return {0, r.err}
    end
  end
  batches[b] = {keys, args}
end
local out = {1}
for b, batch in ipairs(batches) do
  out[b + 1] = finish_batch(batch[1], batch[2])
end
return out
