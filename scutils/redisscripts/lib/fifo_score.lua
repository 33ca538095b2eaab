-- fifo_score(fifo, queue, score) returns, as text, the score at which the
-- next request of priority band score (-priority, a whole number) goes in
-- queue, so that requests of one priority come out in the order they went
-- in (FIFO within a priority): score + seq * 2^-32, seq one more than the
-- last one of the band [score, score + 1) in the queue (1 when the band is
-- empty). fifo is a table the script makes once (local fifo = {}): it
-- remembers each band's last seq, so the queue is read once per band and
-- script and a script's adds get seq in the order it asks.
-- -priority stays the ordering part of the score: a reader popping the
-- lowest score (ZPOPMIN, or ZRANGE 0 0 as the original's crawler) sees
-- the priorities first, then the order of arrival. A band holds 2^32 - 1
-- seqs while it is not empty (the last is then reused: ties, in member
-- order); a score that is not a whole number, or outside (-2^21, 2^21),
-- is used as it is (no tiebreak), as are scores of other writers (an
-- original component writes -priority: its requests go before ours).
local function fifo_score(fifo, queue, score)
  local base = tonumber(score)
  if not base or base ~= math.floor(base) or base <= -2097152 or base >= 2097152 then
    return score
  end
  local band = queue .. '\n' .. score
  local seq = fifo[band]
  if not seq then
    seq = 0
    local last = redis.call('ZREVRANGEBYSCORE', queue, '(' .. (base + 1), base, 'WITHSCORES', 'LIMIT', 0, 1)
    if last[2] then
      seq = math.floor((tonumber(last[2]) - base) * 4294967296 + 0.5)
    end
  end
  if seq < 4294967295 then
    seq = seq + 1
  end
  fifo[band] = seq
  return string.format('%.17g', base + seq / 4294967296)
end
