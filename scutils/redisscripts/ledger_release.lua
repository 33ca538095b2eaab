-- Ends a hold of ledger_end, so that completers may claim the crawl again.
-- Go: Release.
--
-- KEYS[1] the crawl's ledger hash
-- ARGV[1] the holder
--
-- Returns 1 when the holder's hold ended, 0 when it held none.
local v = redis.call('HGET', KEYS[1], 'completing')
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. '|' then
  redis.call('HDEL', KEYS[1], 'completing')
  return 1
end
return 0
