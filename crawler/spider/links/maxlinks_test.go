package links_test

import (
	"fmt"
	"maps"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// limitedPage is a page of body at http://a.example/ whose spider follows
// at most most links, its links read from its tokens (shared, as when a
// crawl's extract rules read the tree) or by the tokenizer.
func limitedPage(body string, most int, shared bool) *spider.Page {
	return spider.NewPage(&spider.Response{
		URL: "http://a.example/", Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
		Body: []byte(body), MaxLinks: most, ShareParse: shared,
	})
}

// TestFollowKeepsToMaxLinksAndCountsTheRest: a page of more links than
// its MaxLinks has its first MaxLinks allowed links followed, in order;
// the filter's refusals among the hrefs read are counted as always, the
// allowed links past the limit and every href past the 4 × MaxLinks read
// as too_many_links; a page within its limit is followed whole, as
// without one. Both ways of reading a page's links agree.
func TestFollowKeepsToMaxLinksAndCountsTheRest(t *testing.T) {
	r := &crawlrequest.Request{URL: "http://a.example/", AllowedDomains: []string{"a.example"}}
	var many strings.Builder
	for i := range 20 {
		if i%4 == 1 {
			fmt.Fprintf(&many, `<a href="http://b.example/%d">off</a>`, i) // refused by the filter
		}
		fmt.Fprintf(&many, `<a href="/p/%d">p%d</a> <a href="/p/%d">again</a>`, i, i, i)
	}
	// 20 allowed links, each written twice, and 5 off the domain: 45 hrefs.
	for _, tc := range []struct {
		name    string
		most    int
		follow  int
		refused map[ledger.Reason]int
	}{
		{"no limit", 0, 20, map[ledger.Reason]int{ledger.RefusedOffDomain: 5}},
		{"a limit above the page's links", 20, 20, map[ledger.Reason]int{ledger.RefusedOffDomain: 5}},
		// 40 hrefs read (/p/0 to /p/16 twice each, the 5 off the domain,
		// /p/17 once): 18 allowed, 10 followed, 8 past the limit; 5 hrefs
		// not read (/p/17 again, /p/18 and /p/19 twice).
		{"a limit of 10", 10, 10, map[ledger.Reason]int{ledger.RefusedOffDomain: 5, ledger.RefusedTooManyLinks: 8 + 5}},
		// 4 hrefs read (/p/0 twice, /b.example/1, /p/1): 1 followed.
		{"a limit of 1", 1, 1, map[ledger.Reason]int{ledger.RefusedOffDomain: 1, ledger.RefusedTooManyLinks: 1 + 41}},
	} {
		for _, shared := range []bool{false, true} {
			got, refused, err := links.Follow(limitedPage(many.String(), tc.most, shared), r)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.follow {
				t.Fatalf("%s (shared parse %v): followed %d links, want %d: %v", tc.name, shared, len(got), tc.follow, got)
			}
			for i, l := range got {
				if want := fmt.Sprintf("http://a.example/p/%d", i); l.URL != want || l.Text != fmt.Sprintf("p%d", i) {
					t.Fatalf("%s (shared parse %v): link %d is %+v, want %s", tc.name, shared, i, l, want)
				}
			}
			if !maps.Equal(refused, tc.refused) {
				t.Fatalf("%s (shared parse %v): refused %v, want %v", tc.name, shared, refused, tc.refused)
			}
		}
	}
}

// TestALinkBombIsReadOnlyToItsLimit: a page of 400,000 links with a limit
// of 1,000 costs about what a page of 4,000 links costs, not what 400,000
// do: the bytes allocated (runtime.MemStats.TotalAlloc, no test of the
// package runs in parallel) to read it, beyond its body's copies, are
// within twice those of a page of 4,000 links without a limit. Without
// the limit the bomb allocates over 100 times more.
func TestALinkBombIsReadOnlyToItsLimit(t *testing.T) {
	r := &crawlrequest.Request{URL: "http://a.example/"}
	page := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `<a href="/l/%d">x</a>`, i)
		}
		return b.String()
	}
	bomb, small := page(400000), page(4000)
	got, refused, err := links.Follow(limitedPage(bomb, 1000, false), r)
	if err != nil || len(got) != 1000 || refused[ledger.RefusedTooManyLinks] != 399000 {
		t.Fatalf("followed %d (%v), refused %v", len(got), err, refused)
	}
	bombBytes := allocated(func() { links.Follow(limitedPage(bomb, 1000, false), r) })
	smallBytes := allocated(func() { links.Follow(limitedPage(small, 0, false), r) })
	if bombBytes > 2*smallBytes+4*int64(len(bomb)) {
		t.Fatalf("Follow of 400,000 links limited to 1,000 allocated %d bytes; of 4,000 links unlimited %d", bombBytes, smallBytes)
	}
}

// allocated is the bytes f allocates.
func allocated(f func()) int64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}
