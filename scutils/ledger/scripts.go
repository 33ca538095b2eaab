package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// LuaNewWork defines the Lua function ledger_new_work for scripts that add
// work to a crawl (a seed, a crawler's follow-ups) in the same step as the
// queue write: prepend it to the script's source and call
//
//	ledger_new_work(keys, member, field, n, stamp, ttl)
//
// with keys = {ledger, active, crawls, app crawls} (NewWorkKeys, passed in
// KEYS), member = Crawl.Member(), field FieldSeeds or FieldEnqueued, stamp =
// Stamp(now) and ttl in seconds. It does what Tally.Write does for new work.
//
// A crawl in the active set was started, indexed and not completed when
// it entered it (a completion takes it out in the same step), so only a
// crawl entering the active set is (re)started and indexed: four writes
// fewer for each page of a running crawl.
const LuaNewWork = `
local function ledger_new_work(keys, member, field, n, stamp, ttl)
  redis.call('HINCRBY', keys[1], field, n)
  redis.call('HSET', keys[1], 'last_activity', stamp)
  redis.call('EXPIRE', keys[1], ttl)
  if redis.call('ZADD', keys[2], stamp, member) == 1 then
    redis.call('HSETNX', keys[1], 'started', stamp)
    redis.call('HDEL', keys[1], 'completed')
    redis.call('ZADD', keys[3], 'NX', stamp, member)
    redis.call('ZADD', keys[4], 'NX', stamp, member)
  end
end
`

// NewWorkKeys are the keys ledger_new_work writes for c, in its order.
func NewWorkKeys(c Crawl) []string {
	return []string{c.Key(), rediskeys.LedgerActiveKey, rediskeys.LedgerCrawlsKey, rediskeys.LedgerAppCrawlsKey(c.AppID)}
}

// seedScript queues a seed and counts it, only when the queue did not hold
// the same member already (a request fed twice is queued once).
//
// KEYS[1] queue, KEYS[2..5] NewWorkKeys
// ARGV[1] score, ARGV[2] member, ARGV[3] index member, ARGV[4] stamp, ARGV[5] ttl
var seedScript = redis.NewScript(LuaNewWork + `
if redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 0
end
ledger_new_work({KEYS[2], KEYS[3], KEYS[4], KEYS[5]}, ARGV[3], 'seeds', 1, ARGV[4], ARGV[5])
return 1
`)

// QueueSeed adds to pipe the queueing of a seed request (member, at score
// in queue) with its count in c's ledger, in one atomic step. The command's
// result is 1 when the seed was queued, 0 when the queue already held it.
func QueueSeed(ctx context.Context, pipe redis.Pipeliner, queue string, score float64, member string, c Crawl, now time.Time, ttl time.Duration) *redis.Cmd {
	keys := append([]string{queue}, NewWorkKeys(c)...)
	return seedScript.Run(ctx, pipe, keys, score, member, c.Member(), Stamp(now), ttlSeconds(ttl))
}

// Seed is one seed request for QueueSeeds: its member, queued at Score in
// Queue, and the crawl it counts for.
type Seed struct {
	Queue  string
	Score  float64
	Member string
	Crawl  Crawl
}

// seedsScript is seedScript for many seeds at once: each seed is queued
// unless its queue held the member already, and each crawl's ledger is
// written once, counting the seeds of it that were queued. Seeds go in
// groups of one queue and one crawl, queued by one ZADD, whose count of
// members added is the group's count of new seeds. A script's writes are
// not undone when it fails half-way, so every key's type is checked
// before the first write: a key of another type fails the whole script,
// with nothing queued and nothing counted.
//
// KEYS[1..nq] the queues, then per crawl its NewWorkKeys
// ARGV[1] stamp, ARGV[2] ttl, ARGV[3] nq, ARGV[4] nc, ARGV[5..4+nc] the
// crawls' index members, then per group: queue number, crawl number,
// number of seeds n, then n pairs of score and member. It returns how
// many seeds were queued.
const seedsScript = LuaNewWork + `
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
local counts, queued = {}, 0
local i = 5 + nc
while i <= #ARGV do
  local c, n = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local added = redis.call('ZADD', KEYS[tonumber(ARGV[i])], unpack(ARGV, i + 3, i + 2 + 2 * n))
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
`

// maxSeedsPerScript bounds one run of seedsScript, so that Redis, which
// runs nothing else meanwhile, is never held long (and a group's members
// stay within what Lua's unpack takes).
const maxSeedsPerScript = 1000

// QueueSeeds adds to pipe the queueing of seeds with their counts in their
// crawls' ledgers, as QueueSeed does for each, in one atomic script per
// up to 1000 seeds instead of one per seed: a seed is counted in the same
// step as its queue write, and one whose member its queue held already
// (fed twice, or a batch stored again) is neither queued nor counted. Each
// command's result is how many of its seeds were queued.
//
// The script is sent whole (EVAL, not EVALSHA): it runs once per many
// seeds, and so never fails with NOSCRIPT on a Redis restarted without its
// script cache while the pipeline's other writes succeed.
func QueueSeeds(ctx context.Context, pipe redis.Pipeliner, seeds []Seed, now time.Time, ttl time.Duration) []*redis.Cmd {
	var cmds []*redis.Cmd
	stamp, ttlArg := Stamp(now), ttlSeconds(ttl)
	for len(seeds) > 0 {
		chunk := seeds[:min(len(seeds), maxSeedsPerScript)]
		seeds = seeds[len(chunk):]
		cmds = append(cmds, queueSeeds(ctx, pipe, chunk, stamp, ttlArg))
	}
	return cmds
}

func queueSeeds(ctx context.Context, pipe redis.Pipeliner, seeds []Seed, stamp string, ttl int64) *redis.Cmd {
	type group struct {
		queue, crawl int
		seeds        []*Seed
	}
	queues := map[string]int{}
	crawls := map[Crawl]int{}
	groups := map[[2]int]*group{}
	var queueKeys []string
	var crawlList []Crawl
	var order []*group
	for i := range seeds {
		s := &seeds[i]
		q, ok := queues[s.Queue]
		if !ok {
			q = len(queueKeys) + 1
			queues[s.Queue] = q
			queueKeys = append(queueKeys, s.Queue)
		}
		c, ok := crawls[s.Crawl]
		if !ok {
			c = len(crawlList) + 1
			crawls[s.Crawl] = c
			crawlList = append(crawlList, s.Crawl)
		}
		g := groups[[2]int{q, c}]
		if g == nil {
			g = &group{queue: q, crawl: c}
			groups[[2]int{q, c}] = g
			order = append(order, g)
		}
		g.seeds = append(g.seeds, s)
	}
	keys := make([]string, 0, len(queueKeys)+4*len(crawlList))
	keys = append(keys, queueKeys...)
	args := make([]any, 0, 4+len(crawlList)+3*len(order)+2*len(seeds))
	args = append(args, stamp, ttl, len(queueKeys), len(crawlList))
	for _, c := range crawlList {
		keys = append(keys, NewWorkKeys(c)...)
		args = append(args, c.Member())
	}
	for _, g := range order {
		args = append(args, g.queue, g.crawl, len(g.seeds))
		for _, s := range g.seeds {
			args = append(args, s.Score, s.Member)
		}
	}
	return pipe.Eval(ctx, seedsScript, keys, args...)
}

// purgeScript removes members of one crawl from a queue and counts those
// removed as purged, in one step. The count is kept only where the crawl
// has a ledger (a crawl fed by the original's Kafka Monitor has none).
//
// KEYS[1] queue, KEYS[2] ledger; ARGV[1] field, ARGV[2] stamp, ARGV[3..] members
var purgeScript = redis.NewScript(`
local n = redis.call('ZREM', KEYS[1], unpack(ARGV, 3))
if n > 0 and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HINCRBY', KEYS[2], ARGV[1], n)
  redis.call('HINCRBY', KEYS[2], 'done', n)
  redis.call('HSET', KEYS[2], 'last_activity', ARGV[2])
end
return n
`)

// maxPurgeMembers bounds one purge script call (Lua's unpack has a limit).
const maxPurgeMembers = 1000

// PurgeQueued adds to pipe the removal of c's members from queue, counted as
// purged by p; each command's result is how many it removed.
func PurgeQueued(ctx context.Context, pipe redis.Pipeliner, queue string, c Crawl, p Purge, members []string, now time.Time) []*redis.Cmd {
	var cmds []*redis.Cmd
	for len(members) > 0 {
		chunk := members[:min(len(members), maxPurgeMembers)]
		members = members[len(chunk):]
		args := make([]any, 0, len(chunk)+2)
		args = append(args, PrefixPurged+string(p), Stamp(now))
		for _, m := range chunk {
			args = append(args, m)
		}
		cmds = append(cmds, purgeScript.Run(ctx, pipe, []string{queue, c.Key()}, args...))
	}
	return cmds
}

// endScript records that a stop or an expire ended a crawl and holds
// completers off it (a claim, as a completer's) while the action purges the
// crawl and answers. Nothing is recorded for a crawl without a ledger, one
// already completed, or one whose crawl-complete a completer is publishing
// right now: that crawl finished before the action came.
//
// KEYS[1] ledger; ARGV[1] purge, ARGV[2] now (epoch seconds), ARGV[3] hold
// "<holder>|<deadline>", ARGV[4] holder
const endScript = `
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local v = redis.call('HMGET', KEYS[1], 'completed', 'completing')
if v[1] then
  return 0
end
if v[2] and string.sub(v[2], 1, #ARGV[4] + 1) ~= ARGV[4] .. '|' then
  local deadline = tonumber(string.match(v[2], '|([^|]*)$'))
  if deadline and deadline > tonumber(ARGV[2]) then
    return 0
  end
end
redis.call('HSET', KEYS[1], 'ended_by', ARGV[1], 'completing', ARGV[3])
return 1
`

// EndedBy records, in pipe, that p (a stop or an expire) ended c: its
// crawl-complete then says "stopped" or "expired". Add it before the
// purge, so that no completer sees the purged crawl finished first. It
// also holds completers off c until Release(holder) or until, so that the
// action's own answer goes out before the crawl-complete; holder names
// the one ending it (one id per monitor: its retry takes the hold over).
// The command's result is 1 when recorded, 0 for a crawl without a ledger,
// completed already, or being completed right now.
func EndedBy(ctx context.Context, pipe redis.Pipeliner, c Crawl, p Purge, holder string, now, until time.Time) *redis.Cmd {
	return pipe.Eval(ctx, endScript, []string{c.Key()}, string(p), Stamp(now), holder+"|"+Stamp(until), holder)
}

// releaseScript ends a hold of EndedBy. KEYS[1] ledger; ARGV[1] holder
const releaseScript = `
local v = redis.call('HGET', KEYS[1], 'completing')
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. '|' then
  redis.call('HDEL', KEYS[1], 'completing')
  return 1
end
return 0
`

// Release lets completers claim c again once the action that ended it
// (EndedBy with holder) has answered.
func Release(ctx context.Context, rdb redis.Cmdable, c Crawl, holder string) error {
	if err := rdb.Eval(ctx, releaseScript, []string{c.Key()}, holder).Err(); err != nil && err != redis.Nil {
		return fmt.Errorf("release the end of crawl %s: %w", c.CrawlID, err)
	}
	return nil
}

// LoadScripts loads the ledger's scripts into Redis. A script added to a
// pipeline is sent by its SHA1 only (EVALSHA), which fails with NOSCRIPT
// when Redis does not know it: load them at start-up, and again when a
// write fails with IsNoScript (Redis restarted without its script cache),
// then write again.
func LoadScripts(ctx context.Context, rdb redis.Scripter) error {
	for _, s := range []*redis.Script{seedScript, purgeScript, claimScript, finishScript} {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return fmt.Errorf("load ledger scripts: %w", err)
		}
	}
	return nil
}

// IsNoScript reports whether err says Redis did not know a script.
func IsNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

func ttlSeconds(d time.Duration) int64 { return max(1, int64(d/time.Second)) }
