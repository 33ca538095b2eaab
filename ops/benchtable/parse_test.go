package benchtable

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// Real `go test -bench` output of this repository's benchmarks.

// go test -run '^$' -bench ClusterWorkload -benchtime 1x ./ops/benchtable/clusterbench/
const clusterOutput = `goos: linux
goarch: amd64
pkg: github.com/scrapycluster/scrapy-cluster-go/ops/benchtable/clusterbench
cpu: Intel(R) Xeon(R) Processor @ 2.80GHz
BenchmarkClusterWorkload-2   	       1	1544376939 ns/op	        22.70 crawler-VmHWM-MB	        14.24 feed-p50-ms	       114.0 feed-p99-ms	        24.51 kafka-monitor-VmHWM-MB	        20.52 redis-monitor-VmHWM-MB	        21.35 rest-VmHWM-MB
PASS
ok  	github.com/scrapycluster/scrapy-cluster-go/ops/benchtable/clusterbench	30.024s
`

// go test -run '^$' -bench . -benchtime 100x -count 2 ./kafka-monitor/plugin/
const pluginOutput = `goos: linux
goarch: amd64
pkg: github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin
cpu: Intel(R) Xeon(R) Processor @ 2.80GHz
BenchmarkValidateCrawlRequest-2   	     100	     49775 ns/op	    6644 B/op	     116 allocs/op
BenchmarkValidateCrawlRequest-2   	     100	     24458 ns/op	    6643 B/op	     116 allocs/op
PASS
ok  	github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin	0.066s
`

func TestParseReal(t *testing.T) {
	res, err := Parse(strings.NewReader(clusterOutput + pluginOutput))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("got %d results, want 3: %+v", len(res), res)
	}
	c := res[0]
	if c.Name != "BenchmarkClusterWorkload" || c.Procs != 2 || c.Iterations != 1 ||
		c.Pkg != "github.com/scrapycluster/scrapy-cluster-go/ops/benchtable/clusterbench" {
		t.Errorf("first result %+v", c)
	}
	want := map[string]float64{"ns/op": 1544376939, "crawler-VmHWM-MB": 22.70, "feed-p50-ms": 14.24, "feed-p99-ms": 114.0,
		"kafka-monitor-VmHWM-MB": 24.51, "redis-monitor-VmHWM-MB": 20.52, "rest-VmHWM-MB": 21.35}
	if len(c.Metrics) != len(want) {
		t.Errorf("metrics %v, want %v", c.Metrics, want)
	}
	for unit, v := range want {
		if c.Metrics[unit] != v {
			t.Errorf("%s = %v, want %v", unit, c.Metrics[unit], v)
		}
	}
	for _, r := range res[1:] {
		if r.Name != "BenchmarkValidateCrawlRequest" || r.Iterations != 100 || r.Pkg != "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin" {
			t.Errorf("result %+v", r)
		}
	}
	if res[1].Metrics["ns/op"] != 49775 || res[2].Metrics["ns/op"] != 24458 || res[2].Metrics["B/op"] != 6643 {
		t.Errorf("plugin metrics %v %v", res[1].Metrics, res[2].Metrics)
	}
}

// testdata/bench-output.txt is the go test output of a whole
// `make bench BENCH_ARGS=-v` run (the six commands, -count 3) on a loaded
// 2-CPU machine, with bench-table's own progress lines removed, and then
// that of the seventh command, the launcher's memory, added later (on
// another 2-CPU machine), that of the eighth, the crawl's cost per page
// (BenchmarkCrawlCost on a loaded 2-CPU machine; its redis-reads/page values
// were added by hand, the metric being younger than the run, and so were its
// Colly and per-site-CPU values, from one later run on a loaded machine), and that of
// the ninth, the crawler's memory under hostile pages (BenchmarkBombMixRSS,
// same machine), and those of the tenth and eleventh, extraction
// (BenchmarkExtract, BenchmarkExtractionCost, on a 2-CPU machine at load 40;
// BenchmarkExtract's lines replaced by a later run at load 18-20, when it
// gained its process CPU figures),
// then that of the re-run's cost (BenchmarkRerunCost, on a loaded 2-CPU
// machine; its first ns/op includes building the binaries), those of
// order and memory (BenchmarkDupeFilterBytesPerURL, BenchmarkFIFOEnqueue,
// -count 3, on a 2-CPU machine at load 40), and those of rendering
// (BenchmarkRenderedPagesPerSecond, BenchmarkRenderRSS, with
// RENDER_BENCH_DEPTH=3 for a short run, on a 2-CPU machine at load 60).
func TestParseMakeBenchOutput(t *testing.T) {
	raw, err := os.ReadFile("testdata/bench-output.txt")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Parse(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	// 3 ingest, 12 pages/s, 3 cluster, 3 latency, 3 REST, 3 idle RSS, 3
	// launcher, 3 crawl cost, 6 hostile pages, 9 extraction, 6 extraction cost,
	// 3 page memory, 6 adaptive versus fixed, 3 run start drift, 3 re-run cost,
	// 6 duplicate filter bytes, 6 FIFO enqueue, 3 rendered pages/s, 3 render
	// memory, 6 REDIS_WAIT_REPLICAS cost, 3 Redis CPU per page on a cluster,
	// 12 duplicate filter bytes on a cluster.
	if len(res) != 108 {
		t.Fatalf("got %d results, want 108", len(res))
	}
	count := map[string]int{}
	for _, r := range res {
		count[r.Name]++
		if r.Procs != 2 {
			t.Errorf("%s: procs %d", r.Name, r.Procs)
		}
	}
	for _, name := range []string{"BenchmarkPagesPerSecond/crawlers=1/defaults", "BenchmarkPagesPerSecond/crawlers=2/tuned",
		"BenchmarkIngestCrawlRequests", "BenchmarkClusterWorkload", "BenchmarkFeedCrawl", "BenchmarkIdleRSS", "BenchmarkNewDomainLatency",
		"BenchmarkLauncherMemory/flags=default", "BenchmarkCrawlCost", "BenchmarkBombMixRSS/mix", "BenchmarkBombMixRSS/page=50MB",
		"BenchmarkExtract/rules=5", "BenchmarkExtract/rules=20", "BenchmarkExtract/rules=20/gogc=100", "BenchmarkExtractionCost", "BenchmarkExtractionCostFollowingLinks", "BenchmarkRerunCost",
		"BenchmarkDupeFilterBytesPerURL/mode=exact", "BenchmarkDupeFilterBytesPerURL/mode=bloom",
		"BenchmarkFIFOEnqueue/tiebreak=on", "BenchmarkFIFOEnqueue/tiebreak=off",
		"BenchmarkRenderedPagesPerSecond", "BenchmarkRenderRSS", "BenchmarkRedisCPUPerPage",
		"BenchmarkClusterDupeFilterBytesPerURL/domains=20/mode=bloom", "BenchmarkClusterDupeFilterBytesPerURL/domains=1000/mode=exact"} {
		if count[name] != 3 {
			t.Errorf("%s: %d results, want 3", name, count[name])
		}
	}
	pages := res[3] // the first BenchmarkPagesPerSecond/crawlers=1/defaults
	if pages.Name != "BenchmarkPagesPerSecond/crawlers=1/defaults" || pages.Pkg != "github.com/scrapycluster/scrapy-cluster-go/crawler/e2e" ||
		pages.Metrics["pages/s"] != 869.6 || pages.Metrics["crawler-cpu-µs/page"] != 450 || pages.Metrics["ns/op"] != 9715911944 {
		t.Errorf("%+v", pages)
	}
	var rest Result
	for _, r := range res {
		if r.Name == "BenchmarkFeedCrawl" {
			rest = r
			break
		}
	}
	if rest.Iterations != 20000 || rest.Metrics["req/s"] != 2576 || rest.Metrics["p99-ms"] != 125.6 || rest.Metrics["allocs/op"] != 182 {
		t.Errorf("%+v", rest)
	}

	// The table of the default benchmarks from that output.
	runs := map[string]*Run{}
	for _, b := range Default() {
		runs[b.key()] = &Run{Command: b.Command(3), Results: res}
	}
	lines, commands := Lines(Default(), runs)
	if len(commands) != 23 {
		t.Errorf("%d commands, want 23", len(commands))
	}
	want := map[string]float64{ // label prefix: median
		"Kafka Monitor ingest":                                   7426,
		"Crawler pages/s, 1 process (default settings)":          725.8,
		"Crawler pages/s, 2 processes (default settings)":        987.8,
		"New domain, feed to first result p50":                   6.528,
		"REST /feed crawl requests":                              2985,
		"crawler, idle":                                          15.39,
		"rest, cluster workload":                                 21.67,
		"local-cluster RSS after the crawl":                      123.0,
		"local-cluster peak RSS during the crawl":                151.3,
		"crawler CPU per page":                                   273.6,
		"  evalsha":                                              0.5712,
		"Redis socket reads per page":                            0.1834,
		"crawler under hostile pages":                            165.9,
		"crawler growth for one 50 MB plain page":                13.38,
		"20 rules on a 200 KB page, p99 µs (CPU":                 8979,
		"20 rules on a 200 KB page, p99 µs (process":             12588,
		"extraction: what 5 rules add":                           15.38,
		"Redis bytes per remembered URL":                         61.2,
		"adaptive: fetches per change detected":                  4.094,
		"re-run: bytes the site sent on the wire":                6.647,
		"re-run: body bytes the site sent":                       0,
		"duplicate filter, exact: Redis bytes per URL":           82.49,
		"duplicate filter, bloom (rate 0.001): Redis":            2.296,
		"follow-ups through the bloom filter":                    72.86,
		"Kafka Monitor seeds with the FIFO tiebreak":             13.43,
		"the same without it":                                    11.29,
		"rendered pages/s":                                       7.849,
		"processor ms per rendered page, every process":          159.8,
		"last 500 over first 500, PSS %":                         5.386,
		"REDIS_WAIT_REPLICAS=1: pages/s":                         335.6,
		"the busiest master's CPU per page over the one Redis's": 0.4615,
		"the three masters' CPU per page over the one Redis's":   1.346,
		"with a replica each: the busiest master's CPU":          0.5263,
		"one Redis: Redis CPU per page":                          70.14,
		"Redis Cluster, 20 domains of 5,000 URLs, bloom":         3.35,
		"a cluster of one master (cluster mode in one process)":  0.9211,
		"the three masters' CPU per page over one master's":      1.416,
	}
	for _, l := range lines {
		if l.Err != nil || len(l.Values) != 3 {
			t.Errorf("%s: %d values, %v", l.Figure.Label, len(l.Values), l.Err)
		}
		for prefix, m := range want {
			if strings.HasPrefix(l.Figure.Label, prefix) && l.Median() != m {
				t.Errorf("%s: median %v, want %v", l.Figure.Label, l.Median(), m)
			}
		}
	}
}

// Shapes the real samples lack (made up in go test's format): without
// GOMAXPROCS > 1 there is no -N suffix; output written while a benchmark ran
// splits its name from its figures; failures and --- BENCH: blocks are
// skipped.
func TestParseShapes(t *testing.T) {
	out := "pkg: example.com/e2e\n" +
		"BenchmarkPagesPerSecond/crawlers=1/defaults-2         \t       1\t2180451022 ns/op\t      1834 pages/s\t       412.5 crawler-cpu-µs/page\n" +
		"BenchmarkPagesPerSecond/crawlers=2/tuned              \t       3\t 980451022 ns/op\t      4080 pages/s\n" +
		"BenchmarkNewDomainLatency-2   \t2026/11/22 09:14:01 crawler-1: started\n" +
		"some more output of the crawler\n" +
		"       1\t3400000000 ns/op\t        12.00 max-ms\t         5.500 p50-ms\t         9.000 p99-ms\n" +
		"--- FAIL: BenchmarkIdleRSS-2\n" +
		"    bench_test.go:280: crawler exited\n" +
		"--- BENCH: BenchmarkFeedCrawl-2\n" +
		"    bench_test.go:90: 20000 requests\n" +
		"FAIL\n"
	res, err := Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("got %d results, want 3: %+v", len(res), res)
	}
	if res[0].Name != "BenchmarkPagesPerSecond/crawlers=1/defaults" || res[0].Procs != 2 || res[0].Metrics["crawler-cpu-µs/page"] != 412.5 {
		t.Errorf("%+v", res[0])
	}
	if res[1].Name != "BenchmarkPagesPerSecond/crawlers=2/tuned" || res[1].Procs != 0 || res[1].Iterations != 3 || res[1].Metrics["pages/s"] != 4080 {
		t.Errorf("%+v", res[1])
	}
	if res[2].Name != "BenchmarkNewDomainLatency" || res[2].Metrics["p50-ms"] != 5.5 || res[2].Pkg != "example.com/e2e" {
		t.Errorf("%+v", res[2])
	}
}

func TestLinesAndWrite(t *testing.T) {
	benches := []Bench{
		{Pkg: "./ops/benchtable/clusterbench/", Pattern: "^BenchmarkClusterWorkload$", Benchtime: "1x", Section: "Latency",
			Figures: []Figure{{Label: "feed p50", Result: "BenchmarkClusterWorkload", Unit: "feed-p50-ms", Target: AtMost(10)}}},
		{Pkg: "./ops/benchtable/clusterbench/", Pattern: "^BenchmarkClusterWorkload$", Benchtime: "1x", Section: "Memory",
			Figures: []Figure{{Label: "rest", Result: "BenchmarkClusterWorkload", Unit: "rest-VmHWM-MB"}}},
		{Pkg: "./kafka-monitor/plugin/", Pattern: ".", Benchtime: "100x", Section: "Memory",
			Figures: []Figure{{Label: "validate", Result: "BenchmarkValidateCrawlRequest", Unit: "ns/op", Target: AtLeast(1)},
				{Label: "absent", Result: "BenchmarkNothing", Unit: "x/s"}}},
	}
	second := strings.Replace(clusterOutput, "14.24 feed-p50-ms", "8.50 feed-p50-ms", 1)
	third := strings.Replace(clusterOutput, "14.24 feed-p50-ms", "9.00 feed-p50-ms", 1)
	cluster, _ := Parse(strings.NewReader(clusterOutput + second + third))
	plugin, _ := Parse(strings.NewReader(pluginOutput))
	runs := map[string]*Run{
		benches[0].key(): {Command: benches[0].Command(3), Results: cluster},
		benches[2].key(): {Command: benches[2].Command(3), Results: plugin},
	}
	lines, commands := Lines(benches, runs)
	if len(lines) != 4 || len(commands) != 2 {
		t.Fatalf("%d lines, %d commands", len(lines), len(commands))
	}
	if m := lines[0].Median(); m != 9 {
		t.Errorf("median %v, want 9", m)
	}
	if lines[1].Command != 1 || lines[2].Command != 2 || lines[3].Err == nil {
		t.Errorf("lines %+v", lines)
	}
	if m := lines[2].Median(); m != (49775+24458)/2.0 {
		t.Errorf("median of two %v", m)
	}
	if !math.IsNaN(lines[3].Median()) {
		t.Error("median of nothing is not NaN")
	}
	var buf bytes.Buffer
	if err := Write(&buf, lines, commands, 3); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		"feed p50", "9.00", "8.50–14.2 (3 runs)", "<= 10 (met)", "[1]",
		">= 1 (met)", "37116", "FAILED",
		"[1] go test -run '^$' -bench '^BenchmarkClusterWorkload$' -benchtime 1x -count 3 ./ops/benchtable/clusterbench/",
		"[2] go test -run '^$' -bench . -benchtime 100x -count 3 ./kafka-monitor/plugin/",
		"absent: no x/s in the output of BenchmarkNothing",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "feed-p50-ms") != 1 || !strings.Contains(got, "Memory") {
		t.Errorf("table:\n%s", got)
	}
}

func TestTarget(t *testing.T) {
	if !AtLeast(2000).Met(2000) || AtLeast(2000).Met(1999) || !AtMost(100).Met(99) || AtMost(100).Met(101) {
		t.Error("targets")
	}
	if AtLeast(5000).String() != ">= 5000" || AtMost(40).String() != "<= 40" {
		t.Errorf("%s %s", AtLeast(5000), AtMost(40))
	}
}

func TestAStarredUnitGivesALinePerMatchingMetricLargestFirst(t *testing.T) {
	benches := []Bench{{Pkg: "./x/", Pattern: "^BenchmarkCost$", Benchtime: "1x", Section: "Cost",
		Figures: []Figure{
			{Label: "cmds", Result: "BenchmarkCost", Unit: "redis-cmds/page"},
			{Label: "  %s", Result: "BenchmarkCost", Unit: "redis-cmd-*/page"},
			{Label: "  %s", Result: "BenchmarkCost", Unit: "absent-*/page"},
		}}}
	results := []Result{
		{Name: "BenchmarkCost", Metrics: map[string]float64{"redis-cmds/page": 5, "redis-cmd-zadd/page": 1, "redis-cmd-evalsha/page": 3, "redis-cmd-/page": 9}},
		{Name: "BenchmarkCost", Metrics: map[string]float64{"redis-cmds/page": 7, "redis-cmd-zadd/page": 2, "redis-cmd-evalsha/page": 5}},
	}
	runs := map[string]*Run{benches[0].key(): {Command: benches[0].Command(2), Results: results}}
	lines, _ := Lines(benches, runs)
	var got []string
	for _, l := range lines {
		got = append(got, fmt.Sprintf("%s=%v", l.Figure.Label, l.Median()))
	}
	want := []string{"cmds=6", "  evalsha=4", "  zadd=1.5"}
	if !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}
