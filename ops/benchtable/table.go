package benchtable

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Bench is one `go test -bench` command and the figures read from it.
type Bench struct {
	Pkg       string // package path relative to the workspace root, e.g. ./rest/server/
	Pattern   string // the -bench regexp
	Benchtime string // the -benchtime value, e.g. 1x
	Section   string // the table section its figures go in
	Figures   []Figure
}

// Figure is one line of the table: a metric of one benchmark result.
//
// A Unit with a "*" (e.g. "redis-cmd-*/page") stands for every metric of the
// result whose unit it matches, each its own line, the largest median
// first; Label then holds a %s for the part the "*" matched. A result
// without any is no failure (such metrics are optional).
type Figure struct {
	Label  string // what it is, e.g. "REST /feed"
	Result string // the result name, e.g. BenchmarkFeedCrawl or BenchmarkPagesPerSecond/crawlers=1/defaults
	Unit   string // the metric's unit, e.g. req/s
	Target *Target
}

// Target is a figure's goal: at least (Min) or at most Value.
type Target struct {
	Value float64
	Min   bool // true: the figure must be >= Value; false: <= Value
}

// Met reports whether v meets the target.
func (t Target) Met(v float64) bool {
	if t.Min {
		return v >= t.Value
	}
	return v <= t.Value
}

func (t Target) String() string {
	op := "<="
	if t.Min {
		op = ">="
	}
	return op + " " + strconv.FormatFloat(t.Value, 'f', -1, 64)
}

// AtLeast and AtMost are targets.
func AtLeast(v float64) *Target { return &Target{Value: v, Min: true} }
func AtMost(v float64) *Target  { return &Target{Value: v} }

// Sections of the table, in order.
const (
	SectionThroughput = "Throughput and latency"
	SectionMemory     = "Peak RSS (VmHWM) of each component process under a short workload"
	SectionLauncher   = "The local-cluster launcher (embedded broker and Redis) after a 100k-page crawl"
	SectionCost       = "CPU per page of each process and Redis commands per page, one crawl of 22,220 pages"
	SectionExtract    = "Declarative extraction (extract rules): per page, and what it adds to the crawler"
	SectionFreshness  = "Re-crawls (recrawl): re-run cost, page memory, run starts, adaptive revisits"
	SectionOrder      = "Order and memory: the duplicate filter's bytes per URL, the cost of FIFO within a priority"
	SectionRender     = "Rendering (headless Chromium): one rendering crawler, default RENDER_* settings, the test site's script pages"
	SectionWait       = "Redis Cluster, REDIS_WAIT_REPLICAS: three masters with a replica each, the Kafka Monitor and two crawlers, a 520-page crawl of 20 domains"
	SectionShard      = "Redis Cluster: Redis CPU per page, one Redis against three masters (without replicas, like for like; with a replica each beside), the same 11,120-page crawl of 20 domains, the Kafka Monitor and two crawlers"
)

// Default is what `make bench` measures: the cluster's own figures, then
// those of the features built on it.
func Default() []Bench { return append(clusterBenches(), featureBenches()...) }

// clusterBenches measure throughput, memory, the launcher and crawl cost.
func clusterBenches() []Bench {
	return []Bench{
		{Pkg: "./kafka-monitor/monitor/", Pattern: "^BenchmarkIngestCrawlRequests$", Benchtime: "20000x", Section: SectionThroughput,
			Figures: []Figure{{Label: "Kafka Monitor ingest, demo.incoming to Redis, 1 process", Result: "BenchmarkIngestCrawlRequests", Unit: "requests/s", Target: AtLeast(50000)}}},
		{Pkg: "./crawler/e2e/", Pattern: "^BenchmarkPagesPerSecond$", Benchtime: "1x", Section: SectionThroughput,
			Figures: []Figure{
				{Label: "Crawler pages/s, 1 process (default settings)", Result: "BenchmarkPagesPerSecond/crawlers=1/defaults", Unit: "pages/s", Target: AtLeast(2000)},
				{Label: "Crawler pages/s, 2 processes (default settings)", Result: "BenchmarkPagesPerSecond/crawlers=2/defaults", Unit: "pages/s", Target: AtLeast(2000)},
				{Label: "Crawler pages/s, 1 process (tuned: 64 in flight, 2 ms linger)", Result: "BenchmarkPagesPerSecond/crawlers=1/tuned", Unit: "pages/s", Target: AtLeast(2000)},
				{Label: "Crawler pages/s, 2 processes (tuned)", Result: "BenchmarkPagesPerSecond/crawlers=2/tuned", Unit: "pages/s", Target: AtLeast(2000)},
			}},
		{Pkg: "./ops/benchtable/clusterbench/", Pattern: "^BenchmarkClusterWorkload$", Benchtime: "1x", Section: SectionThroughput,
			Figures: []Figure{
				{Label: "New domain, feed to first result p50 (incoming to firehose)", Result: "BenchmarkClusterWorkload", Unit: "feed-p50-ms", Target: AtMost(100)},
				{Label: "New domain, feed to first result p99", Result: "BenchmarkClusterWorkload", Unit: "feed-p99-ms"},
			}},
		{Pkg: "./crawler/e2e/", Pattern: "^BenchmarkNewDomainLatency$", Benchtime: "1x", Section: SectionThroughput,
			Figures: []Figure{
				{Label: "New domain, queue announced to fetch p50 (crawler only)", Result: "BenchmarkNewDomainLatency", Unit: "p50-ms", Target: AtMost(100)},
				{Label: "New domain, queue announced to fetch p99 (crawler only)", Result: "BenchmarkNewDomainLatency", Unit: "p99-ms"},
			}},
		{Pkg: "./rest/server/", Pattern: "^BenchmarkFeedCrawl$", Benchtime: "20000x", Section: SectionThroughput,
			Figures: []Figure{
				{Label: "REST /feed crawl requests, 64 clients", Result: "BenchmarkFeedCrawl", Unit: "req/s", Target: AtLeast(5000)},
				{Label: "REST /feed latency p99, 64 clients", Result: "BenchmarkFeedCrawl", Unit: "p99-ms"},
			}},
		{Pkg: "./crawler/e2e/", Pattern: "^BenchmarkIdleRSS$", Benchtime: "1x", Section: SectionMemory,
			Figures: []Figure{{Label: "crawler, idle 3 s after start", Result: "BenchmarkIdleRSS", Unit: "VmHWM-MB", Target: AtMost(40)}}},
		{Pkg: "./ops/benchtable/clusterbench/", Pattern: "^BenchmarkClusterWorkload$", Benchtime: "1x", Section: SectionMemory,
			Figures: []Figure{
				{Label: "kafka-monitor run, cluster workload", Result: "BenchmarkClusterWorkload", Unit: "kafka-monitor-VmHWM-MB"},
				{Label: "redis-monitor, cluster workload", Result: "BenchmarkClusterWorkload", Unit: "redis-monitor-VmHWM-MB"},
				{Label: "crawler, cluster workload", Result: "BenchmarkClusterWorkload", Unit: "crawler-VmHWM-MB"},
				{Label: "rest, cluster workload", Result: "BenchmarkClusterWorkload", Unit: "rest-VmHWM-MB"},
			}},
		{Pkg: "./crawler/e2e/", Pattern: "^BenchmarkBombMixRSS$/^(mix|page=50MB)$", Benchtime: "1x", Section: SectionMemory,
			Figures: []Figure{
				{Label: "crawler under hostile pages: 16 1 GiB gzip bombs and a 50 MB page at once", Result: "BenchmarkBombMixRSS/mix", Unit: "peak-RSS-MB", Target: AtMost(300)},
				{Label: "crawler growth for one 50 MB plain page", Result: "BenchmarkBombMixRSS/page=50MB", Unit: "growth-MB", Target: AtMost(15)},
			}},
		{Pkg: "./ops/benchtable/clusterbench/", Pattern: "^BenchmarkLauncherMemory$/^flags=default$", Benchtime: "1x", Section: SectionLauncher,
			Figures: []Figure{
				{Label: "local-cluster RSS after the crawl, default flags", Result: "BenchmarkLauncherMemory/flags=default", Unit: "launcher-VmRSS-MB", Target: AtMost(200)},
				{Label: "local-cluster peak RSS during the crawl, default flags", Result: "BenchmarkLauncherMemory/flags=default", Unit: "launcher-VmHWM-MB"},
			}},
		{Pkg: "./ops/benchtable/clusterbench/", Pattern: "^BenchmarkCrawlCost$", Benchtime: "1x", Section: SectionCost,
			Figures: []Figure{
				{Label: "crawler CPU per page", Result: "BenchmarkCrawlCost", Unit: "crawler-cpu-µs/page", Target: AtMost(200)},
				{Label: "redis-server CPU per page", Result: "BenchmarkCrawlCost", Unit: "redis-server-cpu-µs/page", Target: AtMost(30)},
				{Label: "broker (kfake) CPU per page", Result: "BenchmarkCrawlCost", Unit: "broker-cpu-µs/page"},
				{Label: "test site CPU per page", Result: "BenchmarkCrawlCost", Unit: "site-cpu-µs/page"},
				{Label: "kafka-monitor CPU per page", Result: "BenchmarkCrawlCost", Unit: "kafka-monitor-cpu-µs/page"},
				{Label: "all five processes, CPU per page", Result: "BenchmarkCrawlCost", Unit: "total-cpu-µs/page"},
				{Label: "pages/s of that crawl (all five on the same cores)", Result: "BenchmarkCrawlCost", Unit: "pages/s", Target: AtLeast(3200)},
				{Label: "a plain Colly crawler's pages/s, same site and trees, same run", Result: "BenchmarkCrawlCost", Unit: "colly-pages/s"},
				{Label: "our pages/s over Colly's", Result: "BenchmarkCrawlCost", Unit: "ours-per-colly", Target: AtLeast(1.0)},
				{Label: "Colly's CPU per page", Result: "BenchmarkCrawlCost", Unit: "colly-cpu-µs/page"},
				{Label: "crawler CPU over the test site's", Result: "BenchmarkCrawlCost", Unit: "crawler-cpu-per-site-cpu", Target: AtMost(1.3)},
				{Label: "broker CPU over the test site's", Result: "BenchmarkCrawlCost", Unit: "broker-cpu-per-site-cpu"},
				{Label: "redis-server CPU over the test site's", Result: "BenchmarkCrawlCost", Unit: "redis-server-cpu-per-site-cpu"},
				{Label: "bytes the broker's log grew by per page (KAFKA_PRODUCER_COMPRESSION)", Result: "BenchmarkCrawlCost", Unit: "broker-log-bytes/page"},
				{Label: "Redis socket reads per page (round trips, INFO stats)", Result: "BenchmarkCrawlCost", Unit: "redis-reads/page"},
				{Label: "Redis commands per page (INFO commandstats)", Result: "BenchmarkCrawlCost", Unit: "redis-cmds/page"},
				{Label: "  %s", Result: "BenchmarkCrawlCost", Unit: "redis-cmd-*/page"},
			}},
	}
}

// featureBenches measure extraction, re-crawls, order and memory, and
// rendering.
func featureBenches() []Bench {
	return []Bench{
		{Pkg: "./scutils/extract/", Pattern: "^BenchmarkExtract$", Benchtime: "1000x", Section: SectionExtract,
			Figures: []Figure{
				{Label: "5 rules on a 200 KB page, p99 µs (elapsed)", Result: "BenchmarkExtract/rules=5", Unit: "p99-µs"},
				{Label: "5 rules on a 200 KB page, p99 µs (CPU of its thread)", Result: "BenchmarkExtract/rules=5", Unit: "cpu-p99-µs"},
				{Label: "5 rules on a 200 KB page, p99 µs (process CPU, the collector's included)", Result: "BenchmarkExtract/rules=5", Unit: "proc-cpu-p99-µs"},
				{Label: "20 rules on a 200 KB page, p99 µs (elapsed)", Result: "BenchmarkExtract/rules=20", Unit: "p99-µs"},
				{Label: "20 rules on a 200 KB page, p99 µs (CPU of its thread)", Result: "BenchmarkExtract/rules=20", Unit: "cpu-p99-µs"},
				{Label: "20 rules on a 200 KB page, p99 µs (process CPU, the collector's included)", Result: "BenchmarkExtract/rules=20", Unit: "proc-cpu-p99-µs", Target: AtMost(5000)},
				{Label: "20 rules on a 200 KB page at GOGC=100 (Go's default, not the crawler's 400), p99 µs (process CPU)", Result: "BenchmarkExtract/rules=20/gogc=100", Unit: "proc-cpu-p99-µs"},
			}},
		{Pkg: "./crawler/e2e/", Pattern: "^BenchmarkExtractionCost$", Benchtime: "1x", Section: SectionExtract,
			Figures: []Figure{
				{Label: "extraction: crawler CPU per page, no rules", Result: "BenchmarkExtractionCost", Unit: "none-cpu-µs/page"},
				{Label: "extraction: crawler CPU per page, 5 rules", Result: "BenchmarkExtractionCost", Unit: "rules5-cpu-µs/page"},
				{Label: "extraction: what 5 rules add to the crawler CPU per page, % (seeds only, maxdepth 0: the rules parse for themselves)", Result: "BenchmarkExtractionCost", Unit: "extract-cpu-%"},
			}},
		{Pkg: "./crawler/e2e/", Pattern: "^BenchmarkExtractionCostFollowingLinks$", Benchtime: "1x", Section: SectionExtract,
			Figures: []Figure{
				{Label: "extraction following links (maxdepth 1): crawler CPU per page, no rules", Result: "BenchmarkExtractionCostFollowingLinks", Unit: "none-cpu-µs/page"},
				{Label: "extraction following links (maxdepth 1): crawler CPU per page, 5 rules", Result: "BenchmarkExtractionCostFollowingLinks", Unit: "rules5-cpu-µs/page"},
				{Label: "extraction following links (maxdepth 1): what 5 rules add to the crawler CPU per page, %", Result: "BenchmarkExtractionCostFollowingLinks", Unit: "extract-cpu-%", Target: AtMost(10)},
			}},
		{Pkg: "./crawler/e2e/cluster/", Pattern: "^BenchmarkRerunCost$", Benchtime: "1x", Section: SectionFreshness,
			Figures: []Figure{
				{Label: "re-run of an unchanged 13-page site (depth 2): page requests, % of run 1's", Result: "BenchmarkRerunCost", Unit: "rerun-requests-%"},
				{Label: "re-run: body bytes the site sent, % of run 1's", Result: "BenchmarkRerunCost", Unit: "rerun-body-bytes-%", Target: AtMost(20)},
				{Label: "re-run: bytes the site sent on the wire (status, headers, bodies), % of run 1's", Result: "BenchmarkRerunCost", Unit: "rerun-wire-bytes-%", Target: AtMost(20)},
				{Label: "re-run: page requests that carried validators, %", Result: "BenchmarkRerunCost", Unit: "rerun-validators-%", Target: AtLeast(90)},
			}},
		{Pkg: "./scutils/recrawl/", Pattern: "^BenchmarkRedisBytesPerRememberedURL$", Benchtime: "1x", Section: SectionFreshness,
			Figures: []Figure{{Label: "Redis bytes per remembered URL (100,000 pages)", Result: "BenchmarkRedisBytesPerRememberedURL", Unit: "redis-bytes/url", Target: AtMost(200)}}},
		{Pkg: "./scutils/recrawl/", Pattern: "^BenchmarkRunStartDrift$", Benchtime: "1x", Section: SectionFreshness,
			Figures: []Figure{
				{Label: "run start after its due time, p50 over 1,000 schedules", Result: "BenchmarkRunStartDrift", Unit: "drift-p50-ms", Target: AtMost(2000)},
				{Label: "run start after its due time, p99", Result: "BenchmarkRunStartDrift", Unit: "drift-p99-ms", Target: AtMost(2000)},
			}},
		{Pkg: "./scutils/recrawl/", Pattern: "^BenchmarkAdaptiveVersusFixed$", Benchtime: "1x", Section: SectionFreshness,
			Figures: []Figure{
				{Label: "fixed: fetches per change detected (10% of 1,000 leaves change per run)", Result: "BenchmarkAdaptiveVersusFixed/adaptive=false", Unit: "fetches/change"},
				{Label: "fixed: delay to detection, runs", Result: "BenchmarkAdaptiveVersusFixed/adaptive=false", Unit: "delay-runs"},
				{Label: "adaptive: fetches per change detected", Result: "BenchmarkAdaptiveVersusFixed/adaptive=true", Unit: "fetches/change"},
				{Label: "adaptive: delay to detection, runs", Result: "BenchmarkAdaptiveVersusFixed/adaptive=true", Unit: "delay-runs"},
				{Label: "adaptive: changes detected within the 50 runs, %", Result: "BenchmarkAdaptiveVersusFixed/adaptive=true", Unit: "detected-%"},
			}},
		{Pkg: "./scutils/redisscripts/", Pattern: "^BenchmarkDupeFilterBytesPerURL$", Benchtime: "1x", Section: SectionOrder,
			Figures: []Figure{
				{Label: "duplicate filter, exact: Redis bytes per URL (100,000 URLs)", Result: "BenchmarkDupeFilterBytesPerURL/mode=exact", Unit: "redis-bytes/url"},
				{Label: "duplicate filter, bloom (rate 0.001): Redis bytes per URL", Result: "BenchmarkDupeFilterBytesPerURL/mode=bloom", Unit: "redis-bytes/url", Target: AtMost(10)},
				{Label: "follow-ups through the exact filter: Redis CPU per URL", Result: "BenchmarkDupeFilterBytesPerURL/mode=exact", Unit: "redis-cpu-µs/url"},
				{Label: "follow-ups through the bloom filter: Redis CPU per URL", Result: "BenchmarkDupeFilterBytesPerURL/mode=bloom", Unit: "redis-cpu-µs/url"},
			}},
		{Pkg: "./scutils/redisscripts/", Pattern: "^BenchmarkClusterDupeFilterBytesPerURL$", Benchtime: "1x", Section: SectionOrder,
			Figures: []Figure{
				{Label: "Redis Cluster, 20 domains of 5,000 URLs, exact: Redis bytes per URL (a filter per domain)", Result: "BenchmarkClusterDupeFilterBytesPerURL/domains=20/mode=exact", Unit: "redis-bytes/url"},
				{Label: "Redis Cluster, 20 domains of 5,000 URLs, bloom (rate 0.001, from 1,024 a domain): Redis bytes per URL", Result: "BenchmarkClusterDupeFilterBytesPerURL/domains=20/mode=bloom", Unit: "redis-bytes/url", Target: AtMost(10)},
				{Label: "Redis Cluster, 1,000 domains of 100 URLs, exact: Redis bytes per URL", Result: "BenchmarkClusterDupeFilterBytesPerURL/domains=1000/mode=exact", Unit: "redis-bytes/url"},
				{Label: "Redis Cluster, 1,000 domains of 100 URLs, bloom: Redis bytes per URL", Result: "BenchmarkClusterDupeFilterBytesPerURL/domains=1000/mode=bloom", Unit: "redis-bytes/url"},
			}},
		{Pkg: "./scutils/redisscripts/", Pattern: "^BenchmarkFIFOEnqueue$", Benchtime: "200x", Section: SectionOrder,
			Figures: []Figure{
				{Label: "Kafka Monitor seeds with the FIFO tiebreak: Redis CPU per seed", Result: "BenchmarkFIFOEnqueue/tiebreak=on", Unit: "redis-cpu-µs/seed"},
				{Label: "the same without it (a score with a fraction): Redis CPU per seed", Result: "BenchmarkFIFOEnqueue/tiebreak=off", Unit: "redis-cpu-µs/seed"},
			}},
		{Pkg: "./crawler/e2e/rediscluster/", Pattern: "^BenchmarkWaitReplicasCost$", Benchtime: "1x", Section: SectionWait,
			Figures: []Figure{
				{Label: "REDIS_WAIT_REPLICAS=0: pages/s", Result: "BenchmarkWaitReplicasCost/wait=0", Unit: "pages/s"},
				{Label: "REDIS_WAIT_REPLICAS=1: pages/s", Result: "BenchmarkWaitReplicasCost/wait=1", Unit: "pages/s"},
				{Label: "REDIS_WAIT_REPLICAS=0: Redis CPU per page, the three masters", Result: "BenchmarkWaitReplicasCost/wait=0", Unit: "masters-cpu-µs/page"},
				{Label: "REDIS_WAIT_REPLICAS=1: Redis CPU per page, the three masters", Result: "BenchmarkWaitReplicasCost/wait=1", Unit: "masters-cpu-µs/page"},
				{Label: "REDIS_WAIT_REPLICAS=0: Redis CPU per page, the busiest master", Result: "BenchmarkWaitReplicasCost/wait=0", Unit: "busiest-master-cpu-µs/page"},
				{Label: "REDIS_WAIT_REPLICAS=1: Redis CPU per page, the busiest master", Result: "BenchmarkWaitReplicasCost/wait=1", Unit: "busiest-master-cpu-µs/page"},
			}},
		{Pkg: "./crawler/e2e/rediscluster/", Pattern: "^BenchmarkRedisCPUPerPage$", Benchtime: "1x", Section: SectionShard,
			Figures: shardFigures},
		{Pkg: "./crawler/e2e/", Pattern: "^BenchmarkRenderedPagesPerSecond$", Benchtime: "1x", Section: SectionRender,
			Figures: []Figure{{Label: "rendered pages/s, default RENDER_CONCURRENCY (1,008 script pages, 16 trees crawled at once)", Result: "BenchmarkRenderedPagesPerSecond",
				Unit: "rendered-pages/s", Target: AtLeast(15)},
				{Label: "processor ms per rendered page, every process (15 pages/s on 2 cores allow 133; test-site-kafka: the bench's own process)", Result: "BenchmarkRenderedPagesPerSecond", Unit: "cpu-ms/page", Target: AtMost(133)},
				{Label: "  of which %s", Result: "BenchmarkRenderedPagesPerSecond", Unit: "*-cpu-ms/page"},
				{Label: "cores idle on average meanwhile (of 2; on a quiet machine, idle cores mean the pool waits)", Result: "BenchmarkRenderedPagesPerSecond", Unit: "idle-cores"},
			}},
		{Pkg: "./crawler/e2e/", Pattern: "^BenchmarkRenderRSS$", Benchtime: "1x", Section: SectionRender,
			Figures: []Figure{
				{Label: "crawler and browsers over 2,032 renders, first 500: mean PSS MB", Result: "BenchmarkRenderRSS", Unit: "first500-PSS-MB", Target: AtMost(800)},
				{Label: "crawler and browsers, last 500: mean PSS MB", Result: "BenchmarkRenderRSS", Unit: "last500-PSS-MB", Target: AtMost(800)},
				{Label: "last 500 over first 500, PSS %", Result: "BenchmarkRenderRSS", Unit: "last-over-first-PSS-%", Target: AtMost(10)},
				{Label: "crawler and browsers, peak PSS MB", Result: "BenchmarkRenderRSS", Unit: "peak-PSS-MB", Target: AtMost(800)},
				{Label: "first 500: mean sum of VmRSS MB (shared pages counted per process)", Result: "BenchmarkRenderRSS", Unit: "first500-RSS-MB"},
				{Label: "last 500: mean sum of VmRSS MB", Result: "BenchmarkRenderRSS", Unit: "last500-RSS-MB"},
				{Label: "peak sum of VmRSS MB", Result: "BenchmarkRenderRSS", Unit: "peak-RSS-MB"},
			}},
	}
}

// Command is the go test command line of b with count runs.
func (b Bench) Command(count int) []string {
	return []string{"go", "test", "-run", "^$", "-bench", b.Pattern, "-benchtime", b.Benchtime, "-count", strconv.Itoa(count), b.Pkg}
}

// key identifies a go test command, so benches sharing one run it once.
func (b Bench) key() string { return b.Pkg + "\x00" + b.Pattern + "\x00" + b.Benchtime }

// ShellQuote joins a command line as a shell would need it.
func ShellQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$\\^*?[]|&;<>(){}!#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// Run is the outcome of one go test command.
type Run struct {
	Command  []string
	Results  []Result
	Err      error
	Output   []byte
	Duration time.Duration
}

// Runner runs go test commands.
type Runner struct {
	Dir   string    // the workspace root
	Count int       // -count
	Log   io.Writer // progress lines; nil: none
	Raw   io.Writer // go test's output as it comes; nil: kept only
}

// RunAll runs each distinct command of benches once, in order.
func (r Runner) RunAll(ctx context.Context, benches []Bench) map[string]*Run {
	runs := map[string]*Run{}
	for _, b := range benches {
		if runs[b.key()] != nil {
			continue
		}
		args := b.Command(r.Count)
		if r.Log != nil {
			fmt.Fprintf(r.Log, "bench-table: %s\n", ShellQuote(args))
		}
		var buf bytes.Buffer
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = r.Dir
		var w io.Writer = &buf
		if r.Raw != nil {
			w = io.MultiWriter(&buf, r.Raw)
		}
		cmd.Stdout, cmd.Stderr = w, w
		start := time.Now()
		err := cmd.Run()
		run := &Run{Command: args, Err: err, Output: buf.Bytes(), Duration: time.Since(start)}
		run.Results, _ = Parse(bytes.NewReader(run.Output))
		if r.Log != nil {
			status := "ok"
			if err != nil {
				status = "FAILED: " + err.Error()
			}
			fmt.Fprintf(r.Log, "bench-table:   %s in %s, %d results\n", status, run.Duration.Round(time.Second), len(run.Results))
		}
		runs[b.key()] = run
	}
	return runs
}

// Line is one figure's values over the runs.
type Line struct {
	Figure  Figure
	Section string
	Values  []float64
	Command int // 1-based index into the commands of the table
	Err     error
}

// Median of the values (NaN when none).
func (l Line) Median() float64 {
	if len(l.Values) == 0 {
		return math.NaN()
	}
	v := slices.Sorted(slices.Values(l.Values))
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// Lines gathers each figure's values from runs (as RunAll returns them)
// and the distinct commands the lines refer to.
func Lines(benches []Bench, runs map[string]*Run) ([]Line, [][]string) {
	var lines []Line
	var commands [][]string
	index := map[string]int{}
	for _, b := range benches {
		run := runs[b.key()]
		if run == nil {
			continue
		}
		if index[b.key()] == 0 {
			commands = append(commands, run.Command)
			index[b.key()] = len(commands)
		}
		for _, f := range b.Figures {
			if strings.Contains(f.Unit, "*") {
				lines = append(lines, expand(f, b.Section, index[b.key()], run)...)
				continue
			}
			l := Line{Figure: f, Section: b.Section, Command: index[b.key()]}
			for _, res := range run.Results {
				if res.Name == f.Result {
					if v, ok := res.Metrics[f.Unit]; ok {
						l.Values = append(l.Values, v)
					}
				}
			}
			if len(l.Values) == 0 {
				l.Err = run.Err
				if l.Err == nil {
					l.Err = fmt.Errorf("no %s in the output of %s", f.Unit, f.Result)
				}
			}
			lines = append(lines, l)
		}
	}
	return lines, commands
}

// expand is the lines of a Figure whose Unit has a "*": one per matching
// unit of its result, the largest median first (none when none matches:
// the metrics are optional).
func expand(f Figure, section string, command int, run *Run) []Line {
	prefix, suffix, _ := strings.Cut(f.Unit, "*")
	byUnit := map[string]*Line{}
	for _, res := range run.Results {
		if res.Name != f.Result {
			continue
		}
		for unit, v := range res.Metrics {
			if len(unit) <= len(prefix)+len(suffix) || !strings.HasPrefix(unit, prefix) || !strings.HasSuffix(unit, suffix) {
				continue
			}
			l := byUnit[unit]
			if l == nil {
				g := f
				g.Unit = unit
				g.Label = fmt.Sprintf(f.Label, unit[len(prefix):len(unit)-len(suffix)])
				l = &Line{Figure: g, Section: section, Command: command}
				byUnit[unit] = l
			}
			l.Values = append(l.Values, v)
		}
	}
	out := make([]Line, 0, len(byUnit))
	for _, l := range byUnit {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b Line) int {
		if c := cmp.Compare(b.Median(), a.Median()); c != 0 {
			return c
		}
		return strings.Compare(a.Figure.Unit, b.Figure.Unit)
	})
	return out
}

// Write prints the table: per section, each figure's median, range over
// the runs, target and command number; then the numbered commands.
func Write(w io.Writer, lines []Line, commands [][]string, count int) error {
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	section := ""
	for _, l := range lines {
		if l.Section != section {
			if section != "" {
				fmt.Fprintln(tw, "\t\t\t\t\t\t")
			}
			section = l.Section
			fmt.Fprintf(tw, "%s\t\t\t\t\t\t\n", section)
			fmt.Fprintln(tw, "  figure\tunit\tmedian\trange (min–max)\ttarget\tcmd\t")
		}
		median, rng, target := "—", "—", "none stated"
		if len(l.Values) > 0 {
			median = format(l.Median())
			rng = fmt.Sprintf("%s–%s (%d runs)", format(slices.Min(l.Values)), format(slices.Max(l.Values)), len(l.Values))
		} else {
			median = "FAILED"
		}
		if t := l.Figure.Target; t != nil {
			target = t.String()
			if len(l.Values) > 0 {
				if t.Met(l.Median()) {
					target += " (met)"
				} else {
					target += " (MISSED)"
				}
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t[%d]\t\n", l.Figure.Label, l.Figure.Unit, median, rng, target, l.Command)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimRight(table.String(), "\n"), "\n") {
		if _, err := io.WriteString(w, strings.TrimRight(line, " ")+"\n"); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nMedian and range over -count %d runs of each command (from the workspace root):\n", count)
	for i, c := range commands {
		fmt.Fprintf(w, "  [%d] %s\n", i+1, ShellQuote(c))
	}
	var failed []string
	for _, l := range lines {
		if l.Err != nil {
			failed = append(failed, fmt.Sprintf("  %s: %v", l.Figure.Label, l.Err))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\nNot measured:\n%s\n", strings.Join(failed, "\n"))
	}
	return nil
}

// format prints a figure with 3 or so significant digits.
func format(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "—"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// shardFigures are BenchmarkRedisCPUPerPage's rows (SectionShard): the
// targets are judged on the cluster without replicas (like for like with
// the one Redis), the with-replicas ratios beside.
var shardFigures = []Figure{
	{Label: "one Redis: Redis CPU per page", Result: "BenchmarkRedisCPUPerPage", Unit: "single-redis-cpu-µs/page"},
	{Label: "cluster: the busiest master's CPU per page", Result: "BenchmarkRedisCPUPerPage", Unit: "busiest-master-cpu-µs/page"},
	{Label: "the busiest master's CPU per page over the one Redis's (no replicas)", Result: "BenchmarkRedisCPUPerPage", Unit: "busiest-master-per-single", Target: AtMost(0.45)},
	{Label: "cluster: the three masters' CPU per page", Result: "BenchmarkRedisCPUPerPage", Unit: "masters-cpu-µs/page"},
	{Label: "the three masters' CPU per page over the one Redis's (no replicas)", Result: "BenchmarkRedisCPUPerPage", Unit: "masters-per-single", Target: AtMost(1.20)},
	{Label: "with a replica each: the busiest master's CPU per page over the one Redis's", Result: "BenchmarkRedisCPUPerPage", Unit: "replicas-busiest-master-per-single"},
	{Label: "with a replica each: the three masters' CPU per page over the one Redis's", Result: "BenchmarkRedisCPUPerPage", Unit: "replicas-masters-per-single"},
	{Label: "a cluster of one master (cluster mode in one process): its CPU per page over the one Redis's", Result: "BenchmarkRedisCPUPerPage", Unit: "one-master-per-single"},
	{Label: "the three masters' CPU per page over one master's (the cost of the split on this machine)", Result: "BenchmarkRedisCPUPerPage", Unit: "masters-per-one-master"},
	{Label: "one Redis: commands per page (INFO commandstats)", Result: "BenchmarkRedisCPUPerPage", Unit: "single-redis-cmds/page"},
	{Label: "cluster: commands per page, the three masters", Result: "BenchmarkRedisCPUPerPage", Unit: "masters-cmds/page"},
	{Label: "cluster: finish and pop script calls per page, the three masters (EVALSHA)", Result: "BenchmarkRedisCPUPerPage", Unit: "cluster-cmd-evalsha/page"},
	{Label: "one Redis: socket reads per page (round trips)", Result: "BenchmarkRedisCPUPerPage", Unit: "single-redis-reads/page"},
	{Label: "cluster: socket reads per page, the busiest master", Result: "BenchmarkRedisCPUPerPage", Unit: "busiest-master-reads/page"},
	{Label: "cluster: socket reads per page, the three masters", Result: "BenchmarkRedisCPUPerPage", Unit: "masters-reads/page"},
	{Label: "one Redis: pages/s", Result: "BenchmarkRedisCPUPerPage", Unit: "single-pages/s"},
	{Label: "cluster: pages/s", Result: "BenchmarkRedisCPUPerPage", Unit: "cluster-pages/s"},
}
