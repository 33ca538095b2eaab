package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// manyLinks is how many pages /many/ has, each linking to all of them:
// every page's follow-ups (about 130 KB of requests) are more than the
// test's FOLLOWUPS_HELD_BYTES, and all but the seed's are duplicates.
const manyLinks = 300

// manyPages serves /many/<n>, each page linking to /many/0 ..
// /many/<manyLinks-1>.
func manyPages() http.Handler {
	var b strings.Builder
	b.WriteString("<html><body>")
	for i := range manyLinks {
		fmt.Fprintf(&b, `<a href="/many/%d">page %d</a> `, i, i)
	}
	b.WriteString("</body></html>")
	page := b.String()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	})
}

// The follow-ups of the requests waiting for their acknowledgement are
// bounded in bytes (FOLLOWUPS_HELD_BYTES), not only in number: while Redis
// refuses the acknowledgements, a page whose follow-ups would pass the
// bound waits for room, holding its slots, so the crawler's memory stays
// bounded whatever the pages link to; once Redis takes them again, the
// crawl completes with nothing lost.
func TestFollowUpsWaitingForTheirAcknowledgementAreBoundedInBytes(t *testing.T) {
	const bound = 64 << 10
	a, b := testsite.NewHold(), testsite.NewHold()
	e := newEnv(t, map[string]string{"QUEUE_HITS": "100000", "QUEUE_WINDOW": "1", "QUEUE_MODERATED": "false",
		"DOWNLOAD_TIMEOUT": "60", "FOLLOWUPS_HELD_BYTES": strconv.Itoa(bound)},
		testsite.WithHandler("GET /many/", manyPages()), testsite.WithHold("/many/7", a), testsite.WithHold("/many/9", b))
	t.Cleanup(a.Release)
	t.Cleanup(b.Release)
	ctx := context.Background()
	allow := func() {
		if err := e.rdb.Do(ctx, "ACL", "SETUSER", "default", "+@all").Err(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(allow) // the server is the package's
	seed := crawl(e.site.URL("/many/0"), "followups", 2)
	e.seedCounted(t, seed)
	for name, h := range map[string]*testsite.Hold{"/many/7": a, "/many/9": b} {
		select {
		case <-h.Arrived():
		case <-time.After(30 * time.Second):
			t.Fatalf("the crawler never fetched %s", name)
		}
	}

	// Redis refuses the scripts, then both held pages go on. A page whose
	// acknowledgement is refused keeps its follow-ups, all of the bound
	// (each page's are more than it), and tries again; every other page
	// with follow-ups, /many/7 or /many/9 among them, must wait for room
	// (or for a processing slot, which the pages waiting for room hold).
	if err := e.rdb.Do(ctx, "ACL", "SETUSER", "default", "-eval", "-evalsha").Err(); err != nil {
		t.Fatal(err)
	}
	a.Release()
	b.Release()
	e.logLine(t, "Failed to acknowledge a request and queue its follow-up requests")
	deadline := time.Now().Add(30 * time.Second)
	for gather(t, e)["scrapy_crawler_followups_waits_total{}"] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no page's follow-ups ever waited for room; metrics %v", gather(t, e))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if held := gather(t, e)["scrapy_crawler_followups_held_bytes{}"]; held != bound {
		t.Errorf("%v bytes of follow-ups held while pages wait, want the bound, %d", held, bound)
	}

	allow()
	var want []string
	for i := range manyLinks {
		want = append(want, e.site.URL("/many/"+strconv.Itoa(i)))
	}
	slices.Sort(want)
	got := urls(e.pages(t, len(want), 90*time.Second))
	e.drained(t, "link")
	e.noMorePages(t)
	if !slices.Equal(got, want) {
		t.Fatalf("crawled %d pages, want %d", len(got), len(want))
	}
	c := ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "followups"}
	p := e.ledgerUntil(t, c, "the crawl's ledger to count every page done", func(p *ledger.Progress) bool { return p.Outstanding() == 0 })
	if p.Published != manyLinks || p.Enqueued != manyLinks-1 {
		t.Fatalf("ledger %+v; want %d published, %d enqueued", p, manyLinks, manyLinks-1)
	}
	if n, _ := e.eng.Scheduler().Leases().Count(ctx); n != 0 {
		t.Errorf("%d leases left", n)
	}
	if held := gather(t, e)["scrapy_crawler_followups_held_bytes{}"]; held != 0 {
		t.Errorf("%v bytes of follow-ups still held after the crawl", held)
	}
}
