// Package frontiertest writes crawls into Redis as the Kafka Monitor and
// the crawlers do, in either key layout (the one Redis's or a Redis
// Cluster's), for the tests of the REST service and its console: the same
// crawl written in both layouts must read the same.
package frontiertest

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// request is a queued crawl request as fed.
type request struct {
	URL      string `json:"url"`
	AppID    string `json:"appid"`
	CrawlID  string `json:"crawlid"`
	Priority int    `json:"priority"`
}

// Seed queues seeds[domain] requests of c in each domain's queue of
// layout l, each counted as a seed in c's ledger (its share of the domain
// in Cluster) at start: the Kafka Monitor's step (ledger.QueueSeedsIn).
// Request i of a domain is http://<domain>/<i>, with priority i.
func Seed(tb testing.TB, rdb redis.UniversalClient, l rediskeys.Layout, c ledger.Crawl, start time.Time, seeds map[string]int) {
	tb.Helper()
	var all []ledger.Seed
	for domain, n := range seeds {
		for i := range n {
			member, err := json.Marshal(request{URL: "http://" + domain + "/" + strconv.Itoa(i), AppID: c.AppID, CrawlID: c.CrawlID, Priority: i})
			if err != nil {
				tb.Fatal(err)
			}
			all = append(all, ledger.Seed{Queue: l.Queue(c.SpiderID, domain), Score: float64(-i), Member: string(member), Crawl: c, Domain: domain})
		}
	}
	ctx := context.Background()
	pipe := rdb.Pipeline()
	cmds := ledger.QueueSeedsIn(ctx, pipe, l, all, start, time.Hour)
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatalf("queue the seeds of crawl %s: %v", c.CrawlID, err)
	}
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			tb.Fatalf("queue the seeds of crawl %s: %v", c.CrawlID, err)
		}
	}
}

// Crawled counts in c's ledger for domain (its share of the domain in
// Cluster), at at, what a crawler counts: pages fetched (status 200) and
// published, and links refused by reason.
func Crawled(tb testing.TB, rdb redis.UniversalClient, l rediskeys.Layout, c ledger.Crawl, domain string, pages int, refused map[ledger.Reason]int, at time.Time) {
	tb.Helper()
	var tl ledger.Tally
	for range pages {
		tl.Fetched(c, 200)
		tl.Published(c, false)
	}
	for r, n := range refused {
		tl.Refused(c, r, n)
	}
	ctx := context.Background()
	pipe := rdb.Pipeline()
	tl.WriteIn(ctx, pipe, l, domain, at, time.Hour)
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatalf("count crawl %s's pages: %v", c.CrawlID, err)
	}
}
