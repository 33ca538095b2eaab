package e2e_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// fiveRules are the rules BenchmarkExtractionCost gives its crawl: one of
// each kind, and an attribute.
const fiveRules = `{"title": {"css": "title"}, "heading": {"xpath": "//h1"}, "links": {"css": "a", "attr": "href", "all": true},` +
	` "level": {"regex": "level (\\d+)"}, "ld": {"jsonld": true}}`

// BenchmarkExtractionCost: one crawler (default settings) crawls batches
// of 1,000 test-site pages, without extract rules and with five
// (fiveRules), in pairs run back to back so that both batches of a pair
// see the same machine (the order alternating from pair to pair); the
// crawler's CPU per page of each kind, and how much more the rules cost
// (extract-cpu-%: the median of the pairs' ratios, as the load of a shared
// machine moves more between pairs than within one). Each iteration runs
// pairsPerRun pairs. The crawler's CPU time is its process's CPU clock
// (processCPUTime, in ns): /proc's utime and stime move in 10 ms ticks, a
// twenty-fifth of a batch's CPU time, which made each pair's ratio move by
// up to 8% on its own.
//
// The crawl is at maxdepth 0: no page is read for links, so the five
// rules build the page's tree for themselves alone, a crawl that follows
// no link (seeds only). BenchmarkExtractionCostFollowingLinks is the same
// crawl reading every page for its links.
func BenchmarkExtractionCost(b *testing.B) { extractionCost(b, nil) }

// BenchmarkExtractionCostFollowingLinks: BenchmarkExtractionCost's batches
// at maxdepth 1, as a crawl that follows links: every page is read for its
// links, and with rules the links come from the tokens the rules' tree is
// built from (extract.Doc.Scan: the page is read once for both). An
// allow_regex that no link matches refuses every link, so that each batch
// is still the same 1,000 pages (following them would change the pages
// crawled from batch to batch); queuing the links, which rules do not
// change, would only add to both sides. This is the crawl the issue's
// target is judged on: a crawl that follows no link is the exception
// (one-page fetches), and only there do the rules pay for the parse alone.
func BenchmarkExtractionCostFollowingLinks(b *testing.B) {
	extractionCost(b, func(r *crawlrequest.Request) {
		r.MaxDepth = 1
		r.AllowRegex = []string{"^none:"}
	})
}

// extractionCost runs BenchmarkExtractionCost, each request changed by
// shape (nil: none).
func extractionCost(b *testing.B, shape func(*crawlrequest.Request)) {
	const perBatch, pairsPerRun = 1000, 7
	c := newCluster(b)
	var sites []*testsite.Site
	for i := 1; i <= 2; i++ {
		sites = append(sites, testsite.StartAt(b, fmt.Sprintf("127.0.0.%d:0", i), testsite.WithPages(250), testsite.WithMaxHits(1000)))
	}
	p := c.startCrawler(b, "crawler", with(benchSettings, "KAFKA_PRODUCER_BATCH_LINGER_MS", "25"))
	batch := 0
	run := func(rules string) time.Duration {
		batch++
		reqs := make([]*crawlrequest.Request, perBatch)
		for i := range reqs {
			site := sites[i%len(sites)]
			reqs[i] = crawl("link", site.URL("/page/"+strconv.Itoa(i/len(sites)%250+1)), "extract-"+strconv.Itoa(batch), 0)
			reqs[i].Attrs = json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`)
			if shape != nil {
				shape(reqs[i])
			}
			if rules != "" {
				if err := reqs[i].SetExtra(crawlrequest.FieldExtract, json.RawMessage(rules)); err != nil {
					b.Fatal(err)
				}
			}
		}
		keys := c.queueAll(b, reqs)
		start := processCPUTime(b, p.pid())
		c.announce(b, keys)
		c.countResults(b, perBatch, 120*time.Second)
		return processCPUTime(b, p.pid()) - start
	}
	run("") // warm up
	run(fiveRules)
	b.ResetTimer()
	var none, five time.Duration
	var ratios []float64
	for i := 0; i < b.N*pairsPerRun; i++ {
		var n, f time.Duration
		if i%2 == 0 {
			n, f = run(""), run(fiveRules)
		} else {
			f, n = run(fiveRules), run("")
		}
		none, five = none+n, five+f
		ratios = append(ratios, float64(f)/float64(n))
	}
	slices.Sort(ratios)
	pages := float64(b.N * pairsPerRun * perBatch)
	b.ReportMetric(float64(none.Microseconds())/pages, "none-cpu-µs/page")
	b.ReportMetric(float64(five.Microseconds())/pages, "rules5-cpu-µs/page")
	b.ReportMetric(100*(ratios[len(ratios)/2]-1), "extract-cpu-%")
}

// processCPUTime is the CPU time the process pid used so far, all its
// threads, from its CPU-time clock (clock_getcpuclockid's: the scheduler's
// nanosecond accounting, where /proc/<pid>/stat counts 10 ms ticks).
func processCPUTime(b *testing.B, pid int) time.Duration {
	var ts unix.Timespec
	// Linux's CPU clock of a process: (^pid << 3) | CPUCLOCK_SCHED (2).
	if err := unix.ClockGettime(int32(^pid<<3|2), &ts); err != nil {
		b.Fatalf("CPU clock of process %d: %v", pid, err)
	}
	return time.Duration(ts.Nano())
}
