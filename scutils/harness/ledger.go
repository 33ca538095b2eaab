package harness

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// CrawlerTally writes to c's ledger at at what crawlers count (a
// ledger.Tally, kept an hour): enqueued follow-up requests, then pages of
// the crawl fetched (status 200) and published.
func CrawlerTally(tb testing.TB, rdb redis.UniversalClient, c ledger.Crawl, enqueued, pages int, at time.Time) {
	tb.Helper()
	var tl ledger.Tally
	if enqueued > 0 {
		tl.Enqueued(c, enqueued)
	}
	for range pages {
		tl.Fetched(c, 200)
		tl.Published(c, false)
	}
	ctx := context.Background()
	pipe := rdb.TxPipeline()
	tl.Write(ctx, pipe, at, time.Hour)
	if _, err := pipe.Exec(ctx); err != nil {
		tb.Fatal(err)
	}
}
