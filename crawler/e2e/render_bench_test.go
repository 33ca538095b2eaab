package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// renderRun is what a rendering benchmark measured from its first result
// to its last.
type renderRun struct {
	pages   int           // the results after the first
	elapsed time.Duration // from the first result to the last
	// cpu is the processor time used meanwhile by process kind: the
	// crawler, its browsers' processes (render.ProcessKind), redis-server
	// and this test process (the test site and the Kafka broker).
	cpu map[string]time.Duration
	// idleCores is the machine's idle processor time over elapsed (all
	// cores: 1.5 is one and a half cores idle on average).
	idleCores float64
}

// renderBench crawls renderBenchRoots disjoint script-page trees of depth
// (from the script pages /js/15 to /js/30, the fifth level of the site's
// binary tree) with one rendering crawler (default RENDER_* settings),
// calling each with the crawler's pid and how many results have come, after
// each result.
func renderBench(b *testing.B, depth int, each func(pid, results, total int)) renderRun {
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
	var cpu *cpuSampler
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
			cpu = sampleCPU(map[int]string{os.Getpid(): "test-site-kafka", cr.pid(): "crawler"})
		}
		seen[u] = true
		if each != nil {
			each(cr.pid(), len(seen), len(tree))
		}
	}
	run := renderRun{pages: len(tree) - 1, elapsed: time.Since(start)}
	run.cpu, run.idleCores = cpu.stop()
	return run
}

// cpuSampler samples this process's tree (render.CPUTracker) every 100 ms
// until stopped, and the machine's idle time.
type cpuSampler struct {
	tracker *render.CPUTracker
	idle0   [2]float64
	done    chan struct{}
	wg      sync.WaitGroup
}

func sampleCPU(names map[int]string) *cpuSampler {
	s := &cpuSampler{tracker: render.NewCPUTracker(os.Getpid(), names), idle0: idleTicks(), done: make(chan struct{})}
	s.wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
				s.tracker.Sample()
			}
		}
	})
	return s
}

// stop ends the sampling: the processor time by kind and the idle cores
// on average since sampleCPU.
func (s *cpuSampler) stop() (map[string]time.Duration, float64) {
	close(s.done)
	s.wg.Wait()
	s.tracker.Sample()
	idle1 := idleTicks()
	var idleCores float64
	if total := idle1[1] - s.idle0[1]; total > 0 {
		idleCores = float64(runtime.NumCPU()) * (idle1[0] - s.idle0[0]) / total
	}
	return s.tracker.ByKind(), idleCores
}

// idleTicks is the machine's idle (idle and iowait) and total processor
// ticks, from /proc/stat.
func idleTicks() [2]float64 {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return [2]float64{}
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	var out [2]float64
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseFloat(f, 64)
		if i == 3 || i == 4 {
			out[0] += v
		}
		out[1] += v
	}
	return out
}

// report reports a run's pages per second, its processor time per page by
// process kind and in all, and the idle cores, and logs the breakdown.
func (r renderRun) report(b *testing.B) {
	b.ReportMetric(float64(r.pages)/r.elapsed.Seconds(), "rendered-pages/s")
	var total time.Duration
	var kinds []string
	for k, d := range r.cpu {
		total += d
		kinds = append(kinds, fmt.Sprintf("%s %.1f", k, perPage(d, r.pages)))
		b.ReportMetric(perPage(d, r.pages), k+"-cpu-ms/page")
	}
	slices.Sort(kinds)
	b.ReportMetric(perPage(total, r.pages), "cpu-ms/page")
	b.ReportMetric(r.idleCores, "idle-cores")
	b.Logf("%d pages in %v: %.1f processor ms per page (%s), %.2f of %d cores idle on average",
		r.pages, r.elapsed.Round(time.Millisecond), perPage(total, r.pages), strings.Join(kinds, ", "), r.idleCores, runtime.NumCPU())
}

// perPage is d in milliseconds per page.
func perPage(d time.Duration, pages int) float64 {
	return float64(d.Microseconds()) / 1000 / float64(max(pages, 1))
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
// 1,008 pages, by default), counted from its first result to its last;
// with the processor time per page of every process taking part, by kind
// (the crawler with its guard proxy, the browser, renderer and other
// Chromium processes, redis-server, this test process with the test site
// and the Kafka broker) and the cores left idle meanwhile: on a quiet
// machine, idle cores mean the pool waits rather than computes.
func BenchmarkRenderedPagesPerSecond(b *testing.B) {
	depth := renderBenchDepth(b, 5)
	for range b.N {
		renderBench(b, depth, nil).report(b)
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
