package e2e_test

import (
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// TestAPageOfTooManyLinksIsFollowedToItsLimitAndCounted: a page of 200,000
// links under MAX_LINKS_PER_PAGE 40 has its first 40 links crawled, its
// result lists those 40, and the crawl ledger counts the other 199,960 as
// refused:too_many_links, so its sums still add up.
func TestAPageOfTooManyLinksIsFollowedToItsLimitAndCounted(t *testing.T) {
	const links, most = 200000, 40
	site := testsite.Start(t)
	c := newCluster(t)
	c.startCrawler(t, "crawler-links", map[string]string{"MAX_LINKS_PER_PAGE": "40"})
	bomb := site.URL("/links/200000")
	want := []string{bomb}
	for i := range most {
		want = append(want, site.URL(testsite.LinkBombHref(i)))
	}
	c.seed(t, crawl("link", bomb, "too-many-links", 1))
	counts := c.resultsFor(t, "too-many-links", want, 90*time.Second)
	if len(counts) != len(want) {
		t.Fatalf("%d pages crawled, want %d: %v", len(counts), len(want), counts)
	}
	for _, p := range c.read {
		if p.URL == bomb && len(p.Links) != most {
			t.Fatalf("the page's result lists %d links, want %d", len(p.Links), most)
		}
	}
	var got map[string]int64
	harness.WaitFor(t, "the ledger to count every page done", 30*time.Second, func() bool {
		got = fields(c.progress(t, "link", "too-many-links"))
		return got["done"] == most+1
	})
	for field, n := range map[string]int64{
		"seeds": 1, "enqueued": most, "done": most + 1, "published": most + 1,
		"refused:too_many_links": links - most, "queued": 0, "in_flight": 0,
	} {
		if got[field] != n {
			t.Errorf("ledger %s = %d, want %d (ledger %v)", field, got[field], n, got)
		}
	}
}
