package recrawl

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// FirstRun is the value of FieldRun a fed request of a scheduled crawl is
// stored with: the Kafka Monitor adds it before building the member.
var FirstRun = json.Number("1")

// Seed is a seed of a scheduled crawl as the Kafka Monitor queues it: its
// queue, score and member (crawlrequest's stored form, with run 1), its
// crawl and URL, its schedule and the crawl's expiry (epoch seconds, 0:
// never).
type Seed struct {
	Queue  string
	Score  float64
	Member string
	Crawl  ledger.Crawl
	URL    string
	// Domain is the URL's domain (its ledger share's on a Redis Cluster).
	Domain  string
	Spec    Spec
	Expires float64
}

// Feed adds to pipe the queueing of a scheduled crawl's seed in run 1 with
// its count in the crawl's ledger, and keeps the seed in the crawl's
// schedule for the runs to come, making the schedule when the crawl has
// no live one (recrawl_feed.lua). A seed fed while a later run goes on
// waits for the next run. The script is sent whole (EVAL), as
// ledger.QueueSeeds sends its own, so that a Redis without its script
// cache fails nothing in the MULTI.
func Feed(ctx context.Context, pipe redis.Pipeliner, s Seed, now time.Time, ttl time.Duration) *redis.Cmd {
	return redisscripts.Eval(ctx, pipe, redisscripts.RecrawlFeed{
		Schedule: ScheduleOf(s.Crawl), Ledger: s.Crawl.Ledger(),
		Every: time.Duration(s.Spec.Every) * time.Second, Runs: s.Spec.Runs, Emit: s.Spec.Emit, Adaptive: s.Spec.Adaptive,
		Expires:   int64(s.Expires),
		SeedField: seedPrefix + s.URL, SeedKept: s.Queue + "\n" + s.Member,
		Queue: s.Queue, Score: s.Score, Member: s.Member,
		Stamp: ledger.Stamp(now), TTL: ttl,
	})
}

// seedPrefix starts the schedule's fields that keep its seeds.
const seedPrefix = "seed:"

// runSeed is a kept seed as queued in run n: its member with "run": n,
// built by crawlrequest (the rest of the member keeps its bytes).
func runSeed(kept string, n int) (redisscripts.RunSeed, string, error) {
	queue, member, ok := strings.Cut(kept, "\n")
	if !ok {
		return redisscripts.RunSeed{}, "", errBadSeed
	}
	r, err := crawlrequest.Decode([]byte(member))
	if err != nil {
		return redisscripts.RunSeed{}, "", err
	}
	if err := r.SetExtra(FieldRun, json.RawMessage(itoa(n))); err != nil {
		return redisscripts.RunSeed{}, "", err
	}
	b, err := r.Encode()
	if err != nil {
		return redisscripts.RunSeed{}, "", err
	}
	return redisscripts.RunSeed{Queue: queue, Score: r.Score(), Member: string(b)}, r.URL, nil
}
