package cluster_test

// Adaptive revisits (issue 25): with recrawl.adaptive, a page that did not
// change is checked less often, a page that changed every run.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// TestAdaptiveRevisitsSkipUnchangedPagesAndRecheckChangedOnes crawls the
// 13-page site four times with adaptive revisits, "/" and "/a/1" changing
// before every run after the first, the other 11 pages never. Run 2
// checks every page (run 1 saw each once); the 11 answer 304 and their
// interval doubles to 2 runs, so run 3 leaves them alone: not fetched (the
// site sees only the two changed pages), not published, counted
// skipped_fresh in run 3's ledger (its crawl-complete and GET /crawls'
// runs), while their links still lead to the pages below them. Run 4 checks
// them again. The two changed pages are fetched in every run and published
// each time with changed: true.
func TestAdaptiveRevisitsSkipUnchangedPagesAndRecheckChangedOnes(t *testing.T) {
	site := startFreshSite(t)
	for run := 2; run <= 4; run++ {
		site.changeAt(run, "/", "/a/1")
	}
	c := newCluster(t, harness.RedisOptions{}, recrawlSettings)
	crawled := c.watch("crawled_firehose")
	outbound := c.watch("outbound_firehose")
	feedScheduled(c, site, "adaptive", map[string]any{"every": 2, "runs": 4, "adaptive": true})
	all := site.pages()
	changing := []string{site.url("/"), site.url("/a/1")}
	// The pages each run fetches, and publishes (emit "all"): every page
	// when it is checked, the changing two alone in run 3.
	want := map[int][]string{1: all, 2: all, 3: changing, 4: all}
	for n := 1; n <= 4; n++ {
		done := outbound.await(t, fmt.Sprintf("the crawl-complete of run %d", n), 90*time.Second, completeOfRun("adaptive", n))
		var fetched []string
		for _, h := range site.runHits(n) {
			fetched = append(fetched, site.url(h.Path))
		}
		slices.Sort(fetched)
		if !slices.Equal(fetched, want[n]) {
			t.Errorf("run %d fetched\n%s\nwant\n%s", n, strings.Join(fetched, "\n"), strings.Join(want[n], "\n"))
		}
		if got := runPages(crawled, "adaptive", n); !slices.Equal(got, want[n]) {
			t.Errorf("run %d published\n%s\nwant\n%s", n, strings.Join(got, "\n"), strings.Join(want[n], "\n"))
		}
		p := progressOf(t, done)
		skipped, unchanged := 0.0, 0.0
		switch n {
		case 2, 4:
			unchanged = float64(len(all) - len(changing))
		case 3:
			skipped = float64(len(all) - len(changing))
		}
		if p["skipped_fresh"] != nilIfZero(skipped) || p["unchanged"] != nilIfZero(unchanged) || p["done"] != float64(len(all)) {
			t.Errorf("run %d progress %s, want %v skipped_fresh, %v unchanged, all %d pages done", n, brief(p), skipped, unchanged, len(all))
		}
		for _, m := range crawled.all(byCrawl("adaptive")) {
			if runOf(m) != n {
				continue
			}
			u := m["url"].(string)
			if wantChanged := n == 1 || slices.Contains(changing, u); m["changed"] != wantChanged {
				t.Errorf("run %d: %s has changed %v, want %v", n, u, m["changed"], wantChanged)
			}
		}
	}
	// Run 3's ledger, as GET /crawls/<crawlid> keeps it.
	runs, _ := c.restGet(t, "/crawls/adaptive?appid="+appID)["runs"].([]any)
	if len(runs) != 4 {
		t.Fatalf("/crawls/adaptive lists %d runs, want 4", len(runs))
	}
	if p := obj(t, runs[2].(map[string]any), "progress"); p["skipped_fresh"] != float64(len(all)-len(changing)) || p["published"] != float64(len(changing)) {
		t.Errorf("/crawls/adaptive run 3: %s, want %d skipped_fresh and %d published", brief(p), len(all)-len(changing), len(changing))
	}
	for _, h := range site.runHits(4) {
		if h.Path != "/" && h.Path != "/a/1" && h.Status != 304 {
			t.Errorf("run 4: %s answered %d, want a 304 to its validators", h.Path, h.Status)
		}
	}
}

// nilIfZero is a progress counter as the JSON has it: left out when zero.
func nilIfZero(n float64) any {
	if n == 0 {
		return nil
	}
	return n
}
