package engine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// Redis refuses the crawler's scripts mid-crawl (ACL: EVAL and EVALSHA
// taken from its user), so the acknowledgements under way fail with an
// error, which go-redis does not send again itself (it does after a
// timeout). The crawler sends each again after its back-off until Redis
// takes it: the crawl completes with every page published once and
// counted once in its ledger, and no lease left.
func TestRefusedAcknowledgementsAreSentAgainUntilRedisTakesThem(t *testing.T) {
	// The site holds /page/3 (a page with follow-ups) until the scripts are
	// refused, so its acknowledgement is sure to be refused: without the
	// hold the crawl could have nothing under way when the refusal lands
	// (one level's pages acknowledged, the next not popped yet), its pops
	// refused and no acknowledgement. The throttle is open, and the held
	// fetch does not time out meanwhile (135 pages).
	hold := testsite.NewHold()
	e := newEnv(t, map[string]string{"QUEUE_HITS": "100000", "QUEUE_WINDOW": "1", "QUEUE_MODERATED": "false", "DOWNLOAD_TIMEOUT": "60"},
		testsite.WithTree(6, 3), testsite.WithHold("/page/3", hold))
	t.Cleanup(hold.Release)
	seed := crawl(e.site.URL("/"), "refused", 3)
	want := testsite.Reachable(seed.URL, 3, notFile, e.site)
	ctx := context.Background()
	allow := func() {
		if err := e.rdb.Do(ctx, "ACL", "SETUSER", "default", "+@all").Err(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(allow) // the server is the package's
	e.seedCounted(t, seed)
	select {
	case <-hold.Arrived():
	case <-time.After(30 * time.Second):
		t.Fatal("the crawler never fetched /page/3")
	}
	if err := e.rdb.Do(ctx, "ACL", "SETUSER", "default", "-eval", "-evalsha").Err(); err != nil {
		t.Fatal(err)
	}
	hold.Release()
	e.logLine(t, "Failed to acknowledge a request and queue its follow-up requests")
	allow()
	got := urls(e.pages(t, len(want), 90*time.Second))
	e.drained(t, "link")
	e.noMorePages(t)
	if !slices.Equal(got, want) {
		t.Fatalf("crawled %d pages:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
	}
	c := ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "refused"}
	p := e.ledgerUntil(t, c, "the crawl's ledger to count every page done", func(p *ledger.Progress) bool { return p.Outstanding() == 0 })
	if p.Published != int64(len(want)) || p.Seeds != 1 || p.Enqueued != int64(len(want)-1) || p.Retried != 0 {
		t.Fatalf("ledger %+v; want %d published, 1 seed, %d enqueued, none retried", p, len(want), len(want)-1)
	}
	if n, _ := e.eng.Scheduler().Leases().Count(ctx); n != 0 {
		t.Errorf("%d leases left", n)
	}
}
