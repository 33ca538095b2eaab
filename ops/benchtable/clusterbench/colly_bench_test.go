package clusterbench_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gocolly/colly/v2"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// collyEnv names, in this test binary run as a Colly crawler, the test
// site's base URL (see TestMain and crawlWithColly).
const collyEnv = "CLUSTERBENCH_COLLY_SITE"

// collyInFlight is how many requests the Colly crawler keeps in flight: as
// many as our crawler's default CONCURRENT_REQUESTS.
const collyInFlight = 16

// collyRun is one crawl of the Colly crawler: the pages it fetched, its
// wall time from start to exit and the CPU (user + system) its process
// used.
type collyRun struct {
	pages     int
	wall, cpu time.Duration
}

// runColly crawls BenchmarkCrawlCost's trees on the site at siteURL with a
// plain Colly crawler in a process of its own (this test binary run again
// with collyEnv set) and waits for it to end.
func runColly(tb testing.TB, siteURL string) collyRun {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	p := harness.StartProcess(tb, harness.ProcessSpec{Name: "colly", Path: self, Args: []string{"-test.run", "^$"},
		Env: append(embeddedEnv(), collyEnv+"="+siteURL), OutputLimit: 64 << 10})
	select {
	case <-p.Done():
	case <-time.After(10 * time.Minute):
		tb.Fatalf("the Colly crawler did not end within 10 minutes\n%s", p.Output())
	}
	run := collyRun{wall: time.Since(start)}
	if err := p.Wait(); err != nil {
		tb.Fatalf("the Colly crawler: %v\n%s", err, p.Output())
	}
	out := p.Output().String()
	i := strings.LastIndex(out, "colly pages ")
	if i < 0 {
		tb.Fatalf("the Colly crawler printed no page count\n%s", out)
	}
	var cpuMicros int64
	if _, err := fmt.Sscanf(out[i:], "colly pages %d cpu-µs %d", &run.pages, &cpuMicros); err != nil {
		tb.Fatalf("the Colly crawler's output: %v\n%s", err, out)
	}
	run.cpu = time.Duration(cpuMicros) * time.Microsecond
	return run
}

// crawlWithColly is the Colly crawler of runColly: the seeds /page/1 ..
// /page/<costSeeds> of the site, links matching /page/ followed to
// costDepth below the seeds (Colly counts a seed as depth 1), each URL once,
// collyInFlight requests at once, the visited set in memory; robots.txt is
// not read (Colly's default). It prints "colly pages N cpu-µs M" (M: its
// process's user and system CPU, getrusage) and returns the exit code.
func crawlWithColly(siteURL string) int {
	c := colly.NewCollector(
		colly.Async(true),
		colly.MaxDepth(costDepth+1),
		colly.URLFilters(regexp.MustCompile(`/page/`)),
	)
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: collyInFlight}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var pages, failed atomic.Int64
	c.OnResponse(func(*colly.Response) { pages.Add(1) })
	c.OnError(func(r *colly.Response, err error) {
		failed.Add(1)
		fmt.Fprintf(os.Stderr, "%s: %v\n", r.Request.URL, err)
	})
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		_ = e.Request.Visit(e.Attr("href")) // already visited, filtered or too deep: not followed
	})
	for i := 1; i <= costSeeds; i++ {
		if err := c.Visit(siteURL + "/page/" + strconv.Itoa(i)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	c.Wait()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("colly pages %d cpu-µs %d\n", pages.Load(), (ru.Utime.Nano()+ru.Stime.Nano())/1000)
	if failed.Load() > 0 {
		return 1
	}
	return 0
}

// runCollyMeasuringSite is runColly with the CPU the test site (pid
// sitePID) used meanwhile.
func runCollyMeasuringSite(tb testing.TB, siteURL string, sitePID int) (collyRun, time.Duration) {
	tb.Helper()
	pids := map[string]int{"site": sitePID}
	before := cpuTimes(tb, pids)
	run := runColly(tb, siteURL)
	return run, cpuTimes(tb, pids)["site"] - before["site"]
}

// reportColly reports the Colly crawls of BenchmarkCrawlCost beside ours
// (oursPagesPerSecond): colly-pages/s, ours-per-colly (our pages/s over
// Colly's, the target ≥ 1.0), colly-cpu-µs/page and the test
// site's CPU per page while Colly crawled it (colly-site-cpu-µs/page).
func reportColly(b *testing.B, runs collyRun, siteCPU time.Duration, oursPagesPerSecond float64) {
	if runs.pages != b.N*costPages {
		b.Fatalf("the Colly crawler fetched %d pages in %d runs, want %d each", runs.pages, b.N, costPages)
	}
	collyPagesPerSecond := float64(runs.pages) / runs.wall.Seconds()
	b.ReportMetric(collyPagesPerSecond, "colly-pages/s")
	b.ReportMetric(oursPagesPerSecond/collyPagesPerSecond, "ours-per-colly")
	b.ReportMetric(float64(runs.cpu.Microseconds())/float64(runs.pages), "colly-cpu-µs/page")
	b.ReportMetric(float64(siteCPU.Microseconds())/float64(runs.pages), "colly-site-cpu-µs/page")
}
