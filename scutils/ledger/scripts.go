package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// Ledger is c's ledger as the scripts (package redisscripts) name it: its
// hash, the index sorted sets and its index member.
func (c Crawl) Ledger() redisscripts.Ledger {
	return redisscripts.Ledger{Hash: c.Key(), Active: rediskeys.LedgerActiveKey, Crawls: rediskeys.LedgerCrawlsKey,
		AppCrawls: rediskeys.LedgerAppCrawlsKey(c.AppID), Member: c.Member()}
}

// LedgerIn is c's ledger for its work in domain under layout l: Ledger()
// in Single; in Cluster the domain's share of the crawl (its counts and
// index sets hash-tagged by domain, rediskeys.Layout.LedgerCounts and
// LedgerActive), written in the step that writes the domain's queue. The
// crawl's totals are the sum of its shares (Sum).
func (c Crawl) LedgerIn(l rediskeys.Layout, domain string) redisscripts.Ledger {
	if !l.IsCluster() {
		return c.Ledger()
	}
	return redisscripts.Ledger{Hash: l.LedgerCounts(c.SpiderID, c.AppID, c.CrawlID, domain),
		Active: l.LedgerActive(domain), Crawls: l.LedgerCrawls(domain),
		AppCrawls: l.LedgerAppCrawls(c.AppID, domain), Member: c.Member()}
}

// Ledgers remembers crawls' Ledger, for callers naming the same few crawls
// many times (a batch of acknowledgements, a page's follow-ups). The zero
// value is ready (the Single layout); it is not safe for concurrent use.
type Ledgers struct {
	// Layout is the key layout In builds for.
	Layout rediskeys.Layout
	m      map[crawlIn]redisscripts.Ledger
}

// crawlIn is a crawl's share in a domain (domain "" in Single: one share).
type crawlIn struct {
	Crawl
	domain string
}

// Of is c.Ledger(), made once per crawl.
func (l *Ledgers) Of(c Crawl) redisscripts.Ledger { return l.at(crawlIn{Crawl: c}, rediskeys.Single) }

// In is c.LedgerIn(l.Layout, domain), made once per crawl and domain.
func (l *Ledgers) In(c Crawl, domain string) redisscripts.Ledger {
	if !l.Layout.IsCluster() {
		domain = ""
	}
	return l.at(crawlIn{Crawl: c, domain: domain}, l.Layout)
}

func (l *Ledgers) at(k crawlIn, layout rediskeys.Layout) redisscripts.Ledger {
	if v, ok := l.m[k]; ok {
		return v
	}
	if l.m == nil {
		l.m = map[crawlIn]redisscripts.Ledger{}
	}
	v := k.LedgerIn(layout, k.domain)
	l.m[k] = v
	return v
}

// Counts lists t's counts for the scripts (redisscripts.FinishAck), their
// ledgers named by l.
func (t *Tally) Counts(l *Ledgers) []redisscripts.LedgerCount {
	var out []redisscripts.LedgerCount
	t.Each(func(c Crawl, field string, n int64) {
		out = append(out, redisscripts.LedgerCount{Ledger: l.Of(c), Field: field, N: n})
	})
	return out
}

// CountsIn is Counts in the crawls' shares of domain under l.Layout
// (Ledgers.In): in Cluster, a request's counts go to its crawl's share of
// the request's domain, in the slot of the domain's queue and leases.
func (t *Tally) CountsIn(l *Ledgers, domain string) []redisscripts.LedgerCount {
	var out []redisscripts.LedgerCount
	t.Each(func(c Crawl, field string, n int64) {
		out = append(out, redisscripts.LedgerCount{Ledger: l.In(c, domain), Field: field, N: n})
	})
	return out
}

// QueueSeed adds to pipe the queueing of a seed request (member, at score
// in queue) with its count in c's ledger, in one atomic step
// (ledger_seed.lua). The command's result is 1 when the seed was queued, 0
// when the queue already held it.
func QueueSeed(ctx context.Context, pipe redis.Pipeliner, queue string, score float64, member string, c Crawl, now time.Time, ttl time.Duration) *redis.Cmd {
	return redisscripts.Run(ctx, pipe, redisscripts.Seed{
		Request: redisscripts.SeedRequest{Queue: queue, Score: score, Member: member, Ledger: c.Ledger()},
		Stamp:   Stamp(now), TTL: ttl,
	})
}

// Seed is one seed request for QueueSeeds: its member, queued at Score in
// Queue, and the crawl it counts for; Domain is its URL's domain (the
// domain of Queue), which names the crawl's ledger share in Cluster.
type Seed struct {
	Queue  string
	Score  float64
	Member string
	Crawl  Crawl
	Domain string
}

// maxSeedsPerScript bounds one run of ledger_seeds.lua, so that Redis,
// which runs nothing else meanwhile, is never held long (and a group's
// members stay within what Lua's unpack takes).
const maxSeedsPerScript = 1000

// QueueSeeds adds to pipe the queueing of seeds with their counts in their
// crawls' ledgers, as QueueSeed does for each, in one atomic script per
// up to 1000 seeds instead of one per seed (ledger_seeds.lua): a seed is
// counted in the same step as its queue write, and one whose member its
// queue held already (fed twice, or a batch stored again) is neither
// queued nor counted. Each command's result is how many of its seeds were
// queued. It is QueueSeedsIn with the Single layout.
//
// The script is sent whole (EVAL, not EVALSHA): it runs once per many
// seeds, and so never fails with NOSCRIPT on a Redis restarted without its
// script cache while the pipeline's other writes succeed.
func QueueSeeds(ctx context.Context, pipe redis.Pipeliner, seeds []Seed, now time.Time, ttl time.Duration) []*redis.Cmd {
	return QueueSeedsIn(ctx, pipe, rediskeys.Single, seeds, now, ttl)
}

// QueueSeedsIn is QueueSeeds for the key layout l, whose queue keys the
// seeds name. In Cluster each script touches one slot: the seeds are
// split by the slot of their domain (rediskeys.Layout.GroupBySlot, the
// batch's order kept within a slot) and counted in their crawl's ledger
// share of their domain (Crawl.LedgerIn); a cluster client's pipeline
// sends each master its scripts in one round trip.
func QueueSeedsIn(ctx context.Context, pipe redis.Pipeliner, l rediskeys.Layout, seeds []Seed, now time.Time, ttl time.Duration) []*redis.Cmd {
	var cmds []*redis.Cmd
	stamp := Stamp(now)
	ledgers := Ledgers{Layout: l}
	for _, group := range seedsBySlot(l, seeds) {
		for len(group) > 0 {
			chunk := group[:min(len(group), maxSeedsPerScript)]
			group = group[len(chunk):]
			reqs := make([]redisscripts.SeedRequest, len(chunk))
			for i, s := range chunk {
				reqs[i] = redisscripts.SeedRequest{Queue: s.Queue, Score: s.Score, Member: s.Member, Ledger: ledgers.In(s.Crawl, s.Domain)}
			}
			cmds = append(cmds, redisscripts.Eval(ctx, pipe, redisscripts.Seeds{Requests: reqs, Stamp: stamp, TTL: ttl}))
		}
	}
	return cmds
}

// seedsBySlot splits seeds into the groups of l.GroupBySlot over their
// domains, each in the seeds' order: one group in Single.
func seedsBySlot(l rediskeys.Layout, seeds []Seed) [][]Seed {
	if !l.IsCluster() || len(seeds) == 0 {
		return [][]Seed{seeds}
	}
	domains := make([]string, len(seeds))
	for i, s := range seeds {
		domains[i] = s.Domain
	}
	group := map[string]int{}
	slots := l.GroupBySlot(domains)
	for g, ds := range slots {
		for _, d := range ds {
			group[d] = g
		}
	}
	out := make([][]Seed, len(slots))
	for _, s := range seeds {
		out[group[s.Domain]] = append(out[group[s.Domain]], s)
	}
	return out
}

// maxPurgeMembers bounds one purge script call (Lua's unpack has a limit).
const maxPurgeMembers = 1000

// PurgeQueued adds to pipe the removal of c's members from queue, counted as
// purged by p (ledger_purge.lua); each command's result is how many it
// removed.
func PurgeQueued(ctx context.Context, pipe redis.Pipeliner, queue string, c Crawl, p Purge, members []string, now time.Time) []*redis.Cmd {
	return PurgeQueuedIn(ctx, pipe, queue, c.Ledger(), p, members, now)
}

// EndedBy records, in pipe, that p (a stop or an expire) ended c: its
// crawl-complete then says "stopped" or "expired" (ledger_end.lua). Add it
// before the purge, so that no completer sees the purged crawl finished
// first. It also holds completers off c until Release(holder) or until, so
// that the action's own answer goes out before the crawl-complete; holder
// names the one ending it (one id per monitor: its retry takes the hold
// over). The command's result is 1 when recorded, 0 for a crawl without a
// ledger, completed already, or being completed right now.
func EndedBy(ctx context.Context, pipe redis.Pipeliner, c Crawl, p Purge, holder string, now, until time.Time) *redis.Cmd {
	return redisscripts.Eval(ctx, pipe, redisscripts.End{Ledger: c.Ledger(), By: string(p), Holder: holder, Now: Stamp(now), Until: Stamp(until)})
}

// Release lets completers claim c again once the action that ended it
// (EndedBy with holder) has answered (ledger_release.lua).
func Release(ctx context.Context, rdb redis.Cmdable, c Crawl, holder string) error {
	if err := redisscripts.Eval(ctx, rdb, redisscripts.Release{Ledger: c.Ledger(), Holder: holder}).Err(); err != nil && err != redis.Nil {
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
	err := redisscripts.Load(ctx, rdb, redisscripts.Seed{}, redisscripts.Purge{}, redisscripts.Claim{}, redisscripts.Complete{})
	if err != nil {
		return fmt.Errorf("load ledger scripts: %w", err)
	}
	return nil
}

// IsNoScript reports whether err says Redis did not know a script.
func IsNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }
