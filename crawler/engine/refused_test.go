package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

func TestARefusedAddressIsALoggedCountedDropNotARetry(t *testing.T) {
	// The site is on 127.0.0.1; only 127.0.0.2 is let through the guard.
	e := newEnv(t, map[string]string{"FETCH_ALLOWED_NETWORKS": "127.0.0.2/32", "RETRY_TIMES": "2"})
	e.seed(t, crawl(e.site.URL("/page/1"), "refused", 1))
	e.seed(t, crawl(e.site.URL("/redirect?to=http://127.0.0.99/internal-secret"), "refused", 1))
	harness.WaitFor(t, "both requests dropped", 30*time.Second, func() bool { return e.eng.Counters().Dropped.Load() == 2 })
	e.drained(t, "link")
	e.pages(t, 0, 10*time.Second) // the reader, from the topic's start
	e.noMorePages(t)
	c := e.eng.Counters()
	if c.Refused.Load() != 2 || c.Retried.Load() != 0 || c.Pages.Load() != 0 {
		t.Fatalf("refused %d, retried %d, pages %d; want 2, 0, 0", c.Refused.Load(), c.Retried.Load(), c.Pages.Load())
	}
	if hits := e.site.Hits(); len(hits) != 0 {
		t.Fatalf("the site was sent %d requests", len(hits))
	}
	for _, want := range []string{`"message": "Request refused; not fetched"`, `"reason": "private_address"`, e.site.URL("/page/1")} {
		if !e.log.Contains(want) {
			t.Errorf("no %s in the log", want)
		}
	}
	if e.log.Contains("Scraper Retry") || e.log.Contains("Gave up retrying") {
		t.Error("a refused request was retried")
	}
	// Not counted as a 504, as failures without a response are. Counts are
	// flushed every 250 ms; noMorePages above waited 500 ms.
	if n := e.rdb.PFCount(context.Background(), rediskeys.CrawlerStatusKey(hostname(t), "link", "504")+":lifetime").Val(); n != 0 {
		t.Errorf("%d 504s counted", n)
	}
}
