package e2e_test

import (
	"bufio"
	"context"
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/render"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// renderBenchDepth is the depth of the script-page trees a rendering
// benchmark crawls (each of 2^(depth+1)-1 pages), unless RENDER_BENCH_DEPTH
// says otherwise (a short check).
func renderBenchDepth(tb testing.TB, def int) int {
	if s := os.Getenv("RENDER_BENCH_DEPTH"); s != "" {
		d, err := strconv.Atoi(s)
		if err != nil || d < 1 {
			tb.Fatalf("RENDER_BENCH_DEPTH %q: want a depth of 1 or more", s)
		}
		return d
	}
	return def
}

// renderBenchRoots is how many script-page trees a rendering benchmark
// crawls at once: enough pages from the start to keep RENDER_CONCURRENCY
// pages rendering (a single binary tree has 1, 2, 4, 8 pages at its first
// levels, fewer than a pool renders at once, so that would time the
// crawl's round trips, not rendering).
const renderBenchRoots = 16

// renderBench crawls renderBenchRoots disjoint script-page trees of depth
// (from the script pages /js/15 to /js/30, the fifth level of the site's
// binary tree) with one rendering crawler (default RENDER_* settings),
// calling each with the crawler's pid and how many results have come, after
// each result. It returns the pages after the first and the time from the
// first result to the last.
func renderBench(b *testing.B, depth int, each func(pid, results, total int)) (pages int, elapsed time.Duration) {
	c := newCluster(b)
	site := testsite.Start(b)
	cr := c.startCrawler(b, "rendering", with(renderEnv, "SC_LOG_LEVEL", "WARNING"))
	tree := map[string]int{}
	var seeds []*crawlrequest.Request
	for root := renderBenchRoots - 1; root < 2*renderBenchRoots-1; root++ {
		maps.Copy(tree, scriptTree(site, root, depth))
		seeds = append(seeds, renderCrawl(b, site.URL(testsite.ScriptPrefix+strconv.Itoa(root)), "bench", depth))
	}
	c.seed(b, seeds...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	var start time.Time
	seen := map[string]bool{}
	for len(seen) < len(tree) {
		msg, err := c.firehose(b).ReadMessage(ctx)
		if err != nil {
			b.Fatalf("after %d of %d pages: %v", len(seen), len(tree), err)
		}
		u := resultURL(msg.Value)
		if _, ok := tree[u]; !ok || seen[u] {
			continue
		}
		if start.IsZero() {
			start = time.Now() // the browser is up: from the first page on
		}
		seen[u] = true
		if each != nil {
			each(cr.pid(), len(seen), len(tree))
		}
	}
	return len(tree) - 1, time.Since(start)
}

// resultURL is a result's "url".
func resultURL(value []byte) string {
	i := strings.Index(string(value), `"url":"`)
	if i < 0 {
		return ""
	}
	rest := string(value[i+len(`"url":"`):])
	return rest[:strings.IndexByte(rest, '"')]
}

// BenchmarkRenderedPagesPerSecond: one rendering crawler with the default
// RENDER_CONCURRENCY renders the test site's script pages (16 trees of 63,
// 1,008 pages, by default), counted from its first result to its last.
func BenchmarkRenderedPagesPerSecond(b *testing.B) {
	depth := renderBenchDepth(b, 5)
	for range b.N {
		pages, elapsed := renderBench(b, depth, nil)
		b.ReportMetric(float64(pages)/elapsed.Seconds(), "rendered-pages/s")
	}
}

// BenchmarkRenderRSS: the resident memory of a rendering crawler and its
// browsers (the sum over the crawler and every process below it: VmRSS,
// which counts memory the browser's processes share once per process, and
// Pss, which shares it out) while it renders 2,032 script pages (16 trees
// of 127; about 2,000 renders): the mean over the first 500 results and
// over the last 500, and the peak.
func BenchmarkRenderRSS(b *testing.B) {
	depth := renderBenchDepth(b, 6)
	for range b.N {
		var first, last, firstPss, lastPss, peak, peakPss float64
		var nFirst, nLast float64
		renderBench(b, depth, func(pid, results, total int) {
			rss, pss := treeMemory(pid)
			peak, peakPss = max(peak, rss), max(peakPss, pss)
			switch window := min(500, total/4); {
			case results <= window:
				first, firstPss, nFirst = first+rss, firstPss+pss, nFirst+1
			case results > total-window:
				last, lastPss, nLast = last+rss, lastPss+pss, nLast+1
			}
		})
		b.ReportMetric(first/nFirst, "first500-RSS-MB")
		b.ReportMetric(last/nLast, "last500-RSS-MB")
		b.ReportMetric(peak, "peak-RSS-MB")
		b.ReportMetric(firstPss/nFirst, "first500-PSS-MB")
		b.ReportMetric(lastPss/nLast, "last500-PSS-MB")
		b.ReportMetric(peakPss, "peak-PSS-MB")
		b.ReportMetric(100*(lastPss/nLast)/(firstPss/nFirst)-100, "last-over-first-PSS-%")
	}
}

// treeMemory is the VmRSS and Pss (MB) of pid and every process below it.
func treeMemory(pid int) (rss, pss float64) {
	for _, p := range append([]int{pid}, render.Descendants(pid)...) {
		rss += kB("/proc/"+strconv.Itoa(p)+"/status", "VmRSS:")
		pss += kB("/proc/"+strconv.Itoa(p)+"/smaps_rollup", "Pss:")
	}
	return rss / 1024, pss / 1024
}

// kB is the value of the line starting with name in a /proc file.
func kB(path, name string) float64 {
	f, err := os.Open(path)
	if err != nil {
		return 0 // the process ended meanwhile
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				v, _ := strconv.ParseFloat(fields[0], 64)
				return v
			}
		}
	}
	return 0
}
