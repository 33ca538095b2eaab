package engine_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// A page that refreshes to another is replaced by it, as Scrapy's
// MetaRefreshMiddleware does: the target is crawled at the page's depth
// (here the crawl's maxdepth, 0) and published under its own URL, sent
// with the page as its Referer; the page itself is not published.
func TestAMetaRefreshIsFollowedAtTheSameDepthAndTheStubIsNotPublished(t *testing.T) {
	e := newEnv(t, nil)
	stub := e.site.URL("/meta-refresh?to=" + url.QueryEscape("/page/2"))
	e.seedCounted(t, crawl(stub, "refresh", 0))
	got := urls(e.pages(t, 1, 30*time.Second))
	e.drained(t, "link")
	e.noMorePages(t)
	if len(got) != 1 || got[0] != e.site.URL("/page/2") {
		t.Fatalf("published %v, want only the target %s", got, e.site.URL("/page/2"))
	}
	if hits := e.site.HitsFor("/page/2"); len(hits) != 1 || hits[0].Referer != stub {
		t.Fatalf("hits of the target %+v, want one with Referer %s", hits, stub)
	}
	p, err := ledger.Read(context.Background(), e.rdb, ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "refresh"})
	if err != nil || p[0] == nil {
		t.Fatalf("ledger: %v", err)
	}
	if pr := p[0]; pr.Seeds != 1 || pr.Enqueued != 1 || pr.Published != 1 || pr.Dropped["meta_refresh"] != 1 || pr.Outstanding() != 0 {
		t.Fatalf("progress %+v, want the seed replaced (dropped:meta_refresh) by its target, published", pr)
	}
}

// METAREFRESH_ENABLED false, or a delay of METAREFRESH_MAXDELAY or more,
// leaves the page as it is: published, its target not fetched.
func TestAMetaRefreshIsLeftAloneWhenOffOrTooSlow(t *testing.T) {
	for _, c := range []struct {
		name     string
		settings map[string]string
		delay    string
	}{
		{"off", map[string]string{"METAREFRESH_ENABLED": "false"}, "0"},
		{"slower than the max delay", map[string]string{"METAREFRESH_MAXDELAY": "5"}, "5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.settings)
			stub := e.site.URL("/meta-refresh?delay=" + c.delay + "&to=" + url.QueryEscape("/page/2"))
			e.seed(t, crawl(stub, "refresh", 0))
			got := urls(e.pages(t, 1, 30*time.Second))
			e.drained(t, "link")
			e.noMorePages(t)
			if len(got) != 1 || got[0] != stub || len(e.site.HitsFor("/page/2")) != 0 {
				t.Fatalf("published %v, fetched the target %d times; want the page itself only", got, len(e.site.HitsFor("/page/2")))
			}
		})
	}
}

// Every request found on a page is sent with the page as its Referer
// (Scrapy's RefererMiddleware), unless REFERER_ENABLED is false.
func TestLinksAreFetchedWithTheirPageAsReferer(t *testing.T) {
	e := newEnv(t, nil)
	seed := crawl(e.site.URL("/page/1"), "referer", 1)
	want := len(testsite.Reachable(seed.URL, 1, notFile, e.site))
	e.seed(t, seed)
	e.pages(t, want, 30*time.Second)
	e.drained(t, "link")
	if hits := e.site.HitsFor("/page/1"); len(hits) != 1 || hits[0].Referer != "" {
		t.Fatalf("the seed's hits %+v, want one without a Referer", hits)
	}
	for _, h := range e.site.Hits() {
		if h.Path != "/page/1" && h.Path != "/robots.txt" && h.Referer != seed.URL {
			t.Errorf("%s fetched with Referer %q, want %s", h.Path, h.Referer, seed.URL)
		}
	}
}

func TestNoRefererIsSentWhenItIsOff(t *testing.T) {
	off := newEnv(t, map[string]string{"REFERER_ENABLED": "false"})
	seed := crawl(off.site.URL("/page/1"), "noreferer", 1)
	off.seed(t, seed)
	off.pages(t, len(testsite.Reachable(seed.URL, 1, notFile, off.site)), 30*time.Second)
	off.drained(t, "link")
	for _, h := range off.site.Hits() {
		if h.Referer != "" {
			t.Errorf("%s fetched with Referer %q with REFERER_ENABLED false", h.Path, h.Referer)
		}
	}
}
