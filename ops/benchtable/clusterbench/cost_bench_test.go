package clusterbench_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/ops/localcluster"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// The crawl BenchmarkCrawlCost runs: costSeeds seeds /page/1 ..
// /page/<costSeeds> of the test site, each the root of a tree of fan-out
// costFanout, crawled to maxdepth costDepth: 20 × (1 + 10 + 100 + 1000) =
// 22,220 pages. allow_regex keeps the crawl in the trees (the tree roots
// also link to the site's home page, which links elsewhere).
const (
	costSeeds  = 20
	costFanout = 10
	costDepth  = 3
)

// costPages is the number of pages one crawl of BenchmarkCrawlCost publishes.
var costPages = func() int {
	n, level := 0, 1
	for range costDepth + 1 {
		n += level
		level *= costFanout
	}
	return costSeeds * n
}()

// costSettings are the crawler's and the Kafka Monitor's settings in
// BenchmarkCrawlCost besides where the services are: the defaults
// (CONCURRENT_REQUESTS 16, CONCURRENT_REQUESTS_PER_DOMAIN 8, INFO logs as
// text on stdout), with the throttle out of the way. The test site is one
// host, so the crawler has 8 fetches in flight to Colly's 16
// (CLUSTERBENCH_EXTRA=CONCURRENT_REQUESTS_PER_DOMAIN=16 is like for like);
// the comparison keeps the original's defaults (docs/crawler.md, requests
// in hand).
var costSettings = []string{
	"QUEUE_HITS=100000", "QUEUE_WINDOW=1", "QUEUE_MODERATED=false",
	"PUBLIC_IP_URL=", "SCHEDULER_IP_ENABLED=false", "ZOOKEEPER_HOSTS=",
	"KAFKA_CONSUMER_AUTO_OFFSET_RESET=earliest",
	loopbackFetchEnv,
	// No admin endpoint (a profiled crawler gets one on a port of its
	// own): two runs at once on one machine took each other's ports.
	"ADMIN_ADDR=",
}

// costProcesses are the processes whose CPU BenchmarkCrawlCost reports,
// in the order of its metrics.
var costProcesses = []string{"crawler", "redis-server", "broker", "site", "kafka-monitor"}

// BenchmarkCrawlCost is the whole pipeline of one crawler on 2 cores: a
// real redis-server, the kfake broker in a process of its own (this test
// binary run again), the test site (crawler/cmd/testsite), the Kafka
// Monitor and one crawler (the binaries built from this tree, or those
// named by CLUSTERBENCH_CRAWLER_BINARY and CLUSTERBENCH_KAFKA_MONITOR_BINARY
// to compare builds), all separate processes. Per iteration it feeds 20
// seeds of one crawl to demo.incoming (costSeeds, costFanout, costDepth:
// 22,220 pages) and waits until the crawl's ledger says every request is
// done, then reports, from that one run:
//
//   - <process>-cpu-µs/page: the CPU time (user + system, from
//     /proc/<pid>/stat) each process used from the feed to the end, divided
//     by the pages published (crawler, redis-server, broker, site,
//     kafka-monitor), and total-cpu-µs/page, their sum;
//   - pages/s over the same span (the machine's other load shows here, not
//     in the CPU figures);
//   - broker-log-bytes/page: what the broker's log files grew by (every
//     topic, the results' firehose the most), per page;
//   - redis-reads/page: how often Redis read requests from a socket (INFO
//     stats total_reads_processed), its round trips near enough: each one
//     a wake-up with its kernel work, whatever it holds;
//   - redis-cmds/page: the commands Redis ran (INFO commandstats: a script
//     run counts once, and each command it runs once more), and
//     redis-cmd-<command>/page for each command with at least 0.01 per page
//     (the log line adds Redis's own time in each, commandstats usec, where
//     a script's includes the commands it runs);
//   - <process>-cpu-per-site-cpu for the crawler, the broker and
//     redis-server: their CPU over the test site's in the same crawl (the
//     machine drifts; these ratios much less);
//   - after our crawl, in the same iteration, a plain Colly crawler
//     (runColly: a process of its own, 16 requests in flight, an in-memory
//     queue) crawls the same trees of the same site: colly-pages/s,
//     ours-per-colly (our pages/s over Colly's), colly-cpu-µs/page and
//     colly-site-cpu-µs/page (the site's CPU while Colly crawled).
//
// The broker keeps its log in files, as the local cluster does by default.
// The five processes share the cores as the local cluster shares them
// (localcluster.CoresEach of five: GOMAXPROCS 1 each on 2 cores), unless
// GOMAXPROCS is in the environment (GOMAXPROCS= gives every process Go's
// default, as before 2026-11-29); the Colly crawler, a plain one, keeps
// Go's default.
//
// CLUSTERBENCH_CPUPROFILE=<file> writes a CPU profile of the crawler
// during the crawl measured (the first CLUSTERBENCH_CPUPROFILE_SECONDS,
// default 10, from the feed; the crawler then serves Go's profiler on an
// admin port of its own), for go tool pprof. The profiler's own cost, a
// few per cent, shows in the crawler's figures of that run.
// CLUSTERBENCH_MEMPROFILE=<file> likewise writes the crawler's
// allocations over the same seconds (Go's allocs profile, a delta: go
// tool pprof -sample_index=alloc_objects), and with any of the three the
// bench reports crawler-allocs/page and crawler-alloc-bytes/page over the
// whole crawl (the Go runtime's counters, from the crawler's /metrics).
// CLUSTERBENCH_TRACE=<file> likewise writes a Go execution trace of the
// crawler over the same seconds, for go tool trace (where its goroutines
// wait: its workers, the scheduler, the publisher and the
// acknowledgements); a trace costs the crawler more than a profile.
//
// CLUSTERBENCH_CRAWLER_BINARY_B=<crawler binary> compares two crawler
// builds in one run, where comparing two runs drowns a few per cent in the
// machine's drift: a second crawler (B) runs beside the first (A) on the
// same Redis, broker, site and Kafka Monitor, one of them stopped
// (SIGSTOP) while the other crawls, and each iteration crawls once with
// each, A then B, then B then A in the next. A's figures are reported as
// without B; B's as b-crawler-cpu-µs/page, b-crawler-cpu-per-site-cpu and
// b-pages/s, and b-per-a-crawler-per-site is B's crawler/site over A's
// (below 1: B is cheaper), b-per-a-crawler-cpu B's crawler µs per page
// over A's. Each crawl's crawler/site is logged, in pairs.
// The profiles and allocation counts are A's. Compare the crawlers' µs per
// page too: one build run as A and as B (4 iterations, a quiet machine)
// gave b-per-a 0.86, the site's own CPU per page moving from crawl to crawl
// more than the crawler's did (123.6 and 129.1 µs a page).
//
// Settings: costSettings (defaults otherwise, INFO text logs included),
// then CLUSTERBENCH_EXTRA's, space-separated NAME=value pairs, to see what
// one setting costs (e.g. CLUSTERBENCH_EXTRA=STATS_STATUS_CODES=false).
// Directly, from the workspace root:
//
//	go test -run '^$' -bench CrawlCost -benchtime 1x ./ops/benchtable/clusterbench/
func BenchmarkCrawlCost(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc")
	}
	bin := harness.BuildBinaries(b, costPackages()...)
	crawlerBin := binaryOr(bin, "crawler", "CLUSTERBENCH_CRAWLER_BINARY")
	monitorBin := binaryOr(bin, "kafka-monitor", "CLUSTERBENCH_KAFKA_MONITOR_BINARY")

	rs := harness.StartRedis(b)
	rdb := rs.TestClient(b)
	ctx := context.Background()
	redisPid, err := redisPID(ctx, rdb)
	if err != nil {
		b.Fatal(err)
	}
	shared := sharedCoresEnv(len(costProcesses))
	broker := startBroker(b, shared...)
	sitePort := harness.Port(b)
	site := startProcess(b, "site", filepath.Join(bin, "testsite"), shared, "--addr", "127.0.0.1:"+strconv.Itoa(sitePort),
		"--pages", strconv.Itoa(costSeeds), "--fanout", strconv.Itoa(costFanout), "--depth", strconv.Itoa(costDepth+1))
	waitFor(b, "the test site", 30*time.Second, func() bool { return dialable("127.0.0.1:" + strconv.Itoa(sitePort)) })

	env := append([]string{"REDIS_HOST=127.0.0.1", "REDIS_PORT=" + strconv.Itoa(rs.Port), "KAFKA_HOSTS=" + broker.addr}, costSettings...)
	env = append(env, shared...)
	if x := os.Getenv("CLUSTERBENCH_EXTRA"); x != "" {
		env = append(env, strings.Fields(x)...)
	}
	monitor := startProcess(b, "kafka-monitor", monitorBin, env, "run")
	profile, trace := os.Getenv("CLUSTERBENCH_CPUPROFILE"), os.Getenv("CLUSTERBENCH_TRACE")
	memProfile := os.Getenv("CLUSTERBENCH_MEMPROFILE")
	var adminAddr string
	crawlerEnv := env
	if profile != "" || trace != "" || memProfile != "" { // the crawler alone serves Go's profiler
		adminAddr = "127.0.0.1:" + strconv.Itoa(harness.Port(b))
		crawlerEnv = append(slices.Clone(env), "ADMIN_ADDR="+adminAddr, "ADMIN_PPROF=true")
	}
	crawler := startProcess(b, "crawler", crawlerBin, crawlerEnv, "--spider", "link")
	pids := map[string]int{"crawler": crawler.Pid(), "redis-server": redisPid, "broker": broker.proc.Pid(),
		"site": site.Pid(), "kafka-monitor": monitor.Pid()}
	var crawlerB *harness.Process // CLUSTERBENCH_CRAWLER_BINARY_B's, stopped while A crawls
	if path := os.Getenv("CLUSTERBENCH_CRAWLER_BINARY_B"); path != "" {
		crawlerB = startProcess(b, "crawler-b", path, env, "--spider", "link")
		crawlerB.Signal(syscall.SIGSTOP)
		b.Cleanup(func() { // before they are stopped: a stopped process takes no SIGTERM
			crawler.Signal(syscall.SIGCONT)
			crawlerB.Signal(syscall.SIGCONT)
		})
	}

	kc := kafkaclient.Config{Brokers: []string{broker.addr}, TopicPrefix: "demo", ConnTimeout: 5 * time.Second,
		BatchLinger: time.Millisecond, MaxRequestBytes: 1 << 20, Partitions: 1, ReplicationFactor: 1}
	writer := kc.NewWriter(kc.Topic("incoming"))
	writer.AllowAutoTopicCreation = true
	b.Cleanup(func() { writer.Close() })
	siteURL := "http://127.0.0.1:" + strconv.Itoa(sitePort)
	feed := func(crawlID string) {
		var msgs []kafka.Message
		for i := 1; i <= costSeeds; i++ {
			req, _ := json.Marshal(map[string]any{"url": siteURL + "/page/" + strconv.Itoa(i), "appid": "bench",
				"crawlid": crawlID, "maxdepth": costDepth, "allow_regex": []string{"/page/"}})
			msgs = append(msgs, kafka.Message{Value: req})
		}
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := writer.WriteMessages(ctx, msgs...); err != nil {
			b.Fatalf("feed %s: %v", crawlID, err)
		}
	}
	procs := []*harness.Process{site, monitor, crawler, broker.proc}
	if crawlerB != nil {
		procs = append(procs, crawlerB)
	}
	wait := func(crawlID string, want int) int {
		return waitCrawl(b, rdb, ledger.Crawl{SpiderID: "link", AppID: "bench", CrawlID: crawlID}, want, procs)
	}

	// Warm up: connections, topics, the scripts in Redis, the site's tree.
	feed("warm-up")
	wait("warm-up", costPages)
	var bRun crawlerBRun
	if crawlerB != nil {
		resume(b, crawlerB, crawler)
		feed("warm-up-b")
		wait("warm-up-b", costPages)
		resume(b, crawler, crawlerB)
		bPids := maps.Clone(pids)
		bPids["crawler"] = crawlerB.Pid()
		bRun.crawl = func(crawlID string) {
			resume(b, crawlerB, crawler)
			cpuStart, start := cpuTimes(b, bPids), time.Now()
			feed(crawlID)
			n := wait(crawlID, costPages)
			bRun.add(n, time.Since(start), cpuStart, cpuTimes(b, bPids))
			resume(b, crawler, crawlerB)
		}
	}

	var pages int
	var elapsed time.Duration
	var reads int64 // socket reads with requests in them: round trips, near enough
	var logBytes int64
	cpu := map[string]time.Duration{}
	cmds := map[string]commandStat{}
	var collyRuns collyRun
	var collySiteCPU time.Duration
	var allocs, allocBytes float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		crawlID := "cost-" + strconv.Itoa(i)
		if bRun.crawl != nil && i%2 == 1 { // B first in every other iteration
			bRun.crawl(crawlID + "-b")
		}
		cpuStart := cpuTimes(b, pids)
		cmdStart := commandStats(b, rdb)
		readsStart := readsProcessed(b, rdb)
		logStart := dirBytes(b, broker.dir)
		allocsStart, allocBytesStart := crawlerAllocs(b, adminAddr)
		start := time.Now()
		feed(crawlID)
		profiled := profileCrawler(b, adminAddr, "profile", profile, i)
		traced := profileCrawler(b, adminAddr, "trace", trace, i)
		memProfiled := profileCrawler(b, adminAddr, "allocs", memProfile, i)
		pages += wait(crawlID, costPages)
		elapsed += time.Since(start)
		allocsEnd, allocBytesEnd := crawlerAllocs(b, adminAddr)
		allocs, allocBytes = allocs+allocsEnd-allocsStart, allocBytes+allocBytesEnd-allocBytesStart
		cpuEnd := cpuTimes(b, pids)
		for name, t := range cpuEnd {
			cpu[name] += t - cpuStart[name]
		}
		bRun.noteA(cpuEnd["crawler"]-cpuStart["crawler"], cpuEnd["site"]-cpuStart["site"])
		if bRun.crawl != nil && i%2 == 0 {
			bRun.crawl(crawlID + "-b")
		}
		if err := <-profiled; err != nil { // after the measures: it may outlast the crawl
			b.Fatalf("CPU profile of the crawler: %v", err)
		}
		if err := <-traced; err != nil {
			b.Fatalf("execution trace of the crawler: %v", err)
		}
		if err := <-memProfiled; err != nil {
			b.Fatalf("allocation profile of the crawler: %v", err)
		}
		reads += readsProcessed(b, rdb) - readsStart
		logBytes += dirBytes(b, broker.dir) - logStart
		for name, s := range commandStats(b, rdb) {
			d := cmds[name]
			d.calls += s.calls - cmdStart[name].calls
			d.usec += s.usec - cmdStart[name].usec
			cmds[name] = d
		}
		colly, siteCPU := runCollyMeasuringSite(b, siteURL, pids["site"])
		collyRuns.pages += colly.pages
		collyRuns.wall += colly.wall
		collyRuns.cpu += colly.cpu
		collySiteCPU += siteCPU
	}
	b.StopTimer()
	perPage := func(v float64) float64 { return v / float64(pages) }
	b.ReportMetric(float64(pages)/elapsed.Seconds(), "pages/s")
	var total time.Duration
	for _, name := range costProcesses {
		b.ReportMetric(perPage(float64(cpu[name].Microseconds())), name+"-cpu-µs/page")
		total += cpu[name]
	}
	b.ReportMetric(perPage(float64(total.Microseconds())), "total-cpu-µs/page")
	b.ReportMetric(perPage(float64(logBytes)), "broker-log-bytes/page")
	for _, name := range []string{"crawler", "broker", "redis-server"} {
		b.ReportMetric(float64(cpu[name])/float64(cpu["site"]), name+"-cpu-per-site-cpu")
	}
	if adminAddr != "" {
		b.ReportMetric(perPage(allocs), "crawler-allocs/page")
		b.ReportMetric(perPage(allocBytes), "crawler-alloc-bytes/page")
	}
	reportColly(b, collyRuns, collySiteCPU, float64(pages)/elapsed.Seconds())
	if bRun.crawl != nil {
		bRun.report(b, float64(cpu["crawler"])/float64(cpu["site"]), float64(cpu["crawler"].Microseconds())/float64(pages))
	}
	var calls int64
	names := make([]string, 0, len(cmds))
	for name, s := range cmds {
		calls += s.calls
		names = append(names, name)
	}
	b.ReportMetric(perPage(float64(calls)), "redis-cmds/page")
	b.ReportMetric(perPage(float64(reads)), "redis-reads/page")
	sort.Slice(names, func(i, j int) bool { return cmds[names[i]].calls > cmds[names[j]].calls })
	var breakdown []string
	for _, name := range names {
		if n := perPage(float64(cmds[name].calls)); n >= 0.01 {
			b.ReportMetric(n, "redis-cmd-"+name+"/page")
			breakdown = append(breakdown, fmt.Sprintf("%s %.2f (%.1f µs)", name, n, perPage(float64(cmds[name].usec))))
		}
	}
	b.Logf("%d pages; Redis commands per page (Redis's own µs per page): %s", pages, strings.Join(breakdown, ", "))
}

// profileCrawler starts taking a profile of the crawler from its admin
// endpoint at addr (kind: "profile", its CPU, or "trace", an execution
// trace), for CLUSTERBENCH_CPUPROFILE_SECONDS (default 10; the crawl takes
// 10 to 30 s on 2 cores), into path (".<i>" added after the first
// iteration); the channel gets its result. No path: nothing, nil.
func profileCrawler(tb testing.TB, addr, kind, path string, i int) <-chan error {
	done := make(chan error, 1)
	if path == "" {
		done <- nil
		return done
	}
	seconds := cmp.Or(os.Getenv("CLUSTERBENCH_CPUPROFILE_SECONDS"), "10")
	if n, err := strconv.Atoi(seconds); err != nil || n < 1 {
		tb.Fatalf("CLUSTERBENCH_CPUPROFILE_SECONDS=%q: not a whole number of seconds", seconds)
	}
	if i > 0 {
		path += "." + strconv.Itoa(i)
	}
	go func() {
		resp, err := http.Get("http://" + addr + "/debug/pprof/" + kind + "?seconds=" + seconds)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			done <- fmt.Errorf("%s: %s", resp.Request.URL, resp.Status)
			return
		}
		f, err := os.Create(path)
		if err == nil {
			_, err = io.Copy(f, resp.Body)
			err = errors.Join(err, f.Close())
		}
		done <- err
	}()
	return done
}

// crawlerAllocs reads the crawler's allocations so far (objects, bytes:
// go_memstats_mallocs_total and go_memstats_alloc_bytes_total of its
// /metrics at addr); no addr: zeros.
func crawlerAllocs(tb testing.TB, addr string) (objects, bytes float64) {
	tb.Helper()
	if addr == "" {
		return 0, 0
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		tb.Fatalf("the crawler's metrics: %v", err)
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("the crawler's metrics: %v", err)
	}
	found := 0
	for line := range strings.SplitSeq(string(text), "\n") {
		name, value, _ := strings.Cut(line, " ")
		v, err := strconv.ParseFloat(value, 64)
		switch {
		case err != nil:
		case name == "go_memstats_mallocs_total":
			objects, found = v, found+1
		case name == "go_memstats_alloc_bytes_total":
			bytes, found = v, found+1
		}
	}
	if found != 2 {
		tb.Fatalf("the crawler's metrics: no go_memstats_mallocs_total or go_memstats_alloc_bytes_total")
	}
	return objects, bytes
}

// crawlerBRun is what CLUSTERBENCH_CRAWLER_BINARY_B's crawler did in
// BenchmarkCrawlCost: crawl runs one measured crawl with it (nil without
// B), and each crawl's crawler/site ratio is kept beside A's of the same
// iteration.
type crawlerBRun struct {
	crawl   func(crawlID string)
	pages   int
	elapsed time.Duration
	cpu     map[string]time.Duration
	ratiosA []float64
	ratiosB []float64
}

// add counts one crawl of B's.
func (r *crawlerBRun) add(pages int, elapsed time.Duration, start, end map[string]time.Duration) {
	if r.cpu == nil {
		r.cpu = map[string]time.Duration{}
	}
	r.pages += pages
	r.elapsed += elapsed
	for name, t := range end {
		r.cpu[name] += t - start[name]
	}
	r.ratiosB = append(r.ratiosB, float64(end["crawler"]-start["crawler"])/float64(end["site"]-start["site"]))
}

// noteA keeps one crawl of A's crawler/site ratio (with B only).
func (r *crawlerBRun) noteA(crawler, site time.Duration) {
	if r.crawl != nil {
		r.ratiosA = append(r.ratiosA, float64(crawler)/float64(site))
	}
}

// report reports B's figures beside A's crawler/site (ratioA) and A's
// crawler µs per page (usA).
func (r *crawlerBRun) report(b *testing.B, ratioA, usA float64) {
	perPage := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(r.pages) }
	ratioB := float64(r.cpu["crawler"]) / float64(r.cpu["site"])
	b.ReportMetric(perPage(r.cpu["crawler"]), "b-crawler-cpu-µs/page")
	b.ReportMetric(ratioB, "b-crawler-cpu-per-site-cpu")
	b.ReportMetric(float64(r.pages)/r.elapsed.Seconds(), "b-pages/s")
	b.ReportMetric(ratioB/ratioA, "b-per-a-crawler-per-site")
	b.ReportMetric(perPage(r.cpu["crawler"])/usA, "b-per-a-crawler-cpu")
	pairs := make([]string, len(r.ratiosA))
	for i := range r.ratiosA {
		pairs[i] = fmt.Sprintf("%.3f/%.3f", r.ratiosA[i], r.ratiosB[i])
	}
	b.Logf("crawler/site per crawl, A/B: %s", strings.Join(pairs, " "))
}

// resume lets run crawl and stops idle (SIGSTOP), once idle is stopped:
// one crawler of BenchmarkCrawlCost's two crawls at a time. Between
// crawls neither holds a lease or a request, so the stopped one holds up
// nothing.
func resume(tb testing.TB, run, idle *harness.Process) {
	tb.Helper()
	idle.Signal(syscall.SIGSTOP)
	waitFor(tb, idle.Name()+" stopped", 30*time.Second, func() bool { return procState(idle.Pid()) == "T" })
	run.Signal(syscall.SIGCONT)
}

// procState is a process's state letter from /proc/<pid>/stat (T:
// stopped), "" when it cannot be read.
func procState(pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	_, rest, ok := strings.Cut(string(raw), ") ")
	if !ok || rest == "" {
		return ""
	}
	return rest[:1]
}

// costPackages are the binaries BenchmarkCrawlCost builds: the test site,
// and the crawler and the Kafka Monitor unless the environment names
// others (on a loaded machine, linking the cluster's five binaries took
// minutes of each run).
func costPackages() []string {
	pkgs := []string{"./crawler/cmd/testsite"}
	for env, pkg := range map[string]string{"CLUSTERBENCH_CRAWLER_BINARY": "./crawler/cmd/crawler",
		"CLUSTERBENCH_KAFKA_MONITOR_BINARY": "./kafka-monitor/cmd/kafka-monitor"} {
		if os.Getenv(env) == "" {
			pkgs = append(pkgs, pkg)
		}
	}
	return pkgs
}

// dirBytes is the size of the files under dir.
func dirBytes(tb testing.TB, dir string) int64 {
	tb.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		tb.Fatalf("size of the broker's log: %v", err)
	}
	return n
}

// binaryOr is the binary named by the environment variable env, or name in dir.
func binaryOr(dir, name, env string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	return filepath.Join(dir, name)
}

func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// redisPID is the redis-server's process id (INFO server).
func redisPID(ctx context.Context, rdb *redis.Client) (int, error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO server: %w", err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("no process_id in INFO server")
}

// commandStat is one command's line of INFO commandstats.
type commandStat struct{ calls, usec int64 }

// commandStats reads INFO commandstats: calls and usec by command name
// (lower case, "|" for a subcommand).
func commandStats(tb testing.TB, rdb *redis.Client) map[string]commandStat {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatalf("INFO commandstats: %v", err)
	}
	out := map[string]commandStat{}
	for _, line := range strings.Split(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, fields, _ := strings.Cut(rest, ":")
		var s commandStat
		for _, kv := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				s.calls = n
			case "usec":
				s.usec = n
			}
		}
		out[name] = s
	}
	return out
}

// readsProcessed is INFO stats' total_reads_processed: how many times
// Redis read from a client's socket, each a wake-up that costs it a read
// call and kernel work whatever it holds.
func readsProcessed(tb testing.TB, rdb *redis.Client) int64 {
	tb.Helper()
	info, err := rdb.Info(context.Background(), "stats").Result()
	if err != nil {
		tb.Fatalf("INFO stats: %v", err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_reads_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatalf("INFO stats: total_reads_processed %q: %v", v, err)
			}
			return n
		}
	}
	tb.Fatal("INFO stats has no total_reads_processed (Redis 6 or newer has)")
	return 0
}

// cpuTimes reads each process's CPU time so far.
func cpuTimes(tb testing.TB, pids map[string]int) map[string]time.Duration {
	tb.Helper()
	out := make(map[string]time.Duration, len(pids))
	for name, pid := range pids {
		t, err := procCPU(pid)
		if err != nil {
			tb.Fatalf("CPU time of %s: %v", name, err)
		}
		out[name] = t
	}
	return out
}

// procCPU is the CPU time (user and system) a process used so far, from
// /proc/<pid>/stat in clock ticks of 10 ms (Linux's USER_HZ).
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count after it.
	_, rest, ok := strings.Cut(string(raw), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, fmt.Errorf("cannot read /proc/%d/stat: %q", pid, raw)
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime: fields 14 and 15 of the line
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// waitCrawl waits until c's ledger says every request is done (seeds +
// enqueued = done, with the seeds in) and returns the pages published;
// fewer than want fails the benchmark, as does a process that exits.
func waitCrawl(tb testing.TB, rdb *redis.Client, c ledger.Crawl, want int, procs []*harness.Process) int {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	var counts []any
	for {
		var err error
		counts, err = rdb.HMGet(context.Background(), c.Key(), ledger.FieldSeeds, ledger.FieldEnqueued, ledger.FieldDone, ledger.FieldPublished).Result()
		if err != nil {
			tb.Fatalf("read the ledger of %s: %v", c.CrawlID, err)
		}
		n := make([]int, len(counts))
		for i, v := range counts {
			n[i], _ = strconv.Atoi(fmt.Sprint(v))
		}
		seeds, enqueued, done, published := n[0], n[1], n[2], n[3]
		if seeds == costSeeds && done == seeds+enqueued {
			if published != want {
				all, _ := rdb.HGetAll(context.Background(), c.Key()).Result()
				tb.Fatalf("crawl %s ended with %d pages published, not %d: %v", c.CrawlID, published, want, all)
			}
			return published
		}
		for _, p := range procs {
			if p.Exited() {
				tb.Fatalf("%s exited: %v\n%s", p.Name(), p.Wait(), p.Output())
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("crawl %s not done after 10 minutes: seeds, enqueued, done, published %v", c.CrawlID, counts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startProcess starts a child process of the benchmark: the last 64 KiB of
// its output are kept, and it gets SIGTERM (SIGKILL 20 s later) when the
// benchmark ends, which fails if it exited before or did not stop.
func startProcess(tb testing.TB, name, path string, env []string, args ...string) *harness.Process {
	tb.Helper()
	return harness.StartProcess(tb, harness.ProcessSpec{Name: name, Path: path, Args: args, Env: append(embeddedEnv(), env...),
		OutputLimit: 64 << 10, StopGrace: 20 * time.Second, Supervise: true})
}

// sharedCoresEnv is GOMAXPROCS as the local cluster would give each of
// processes on this machine's cores (localcluster.CoresShare: nothing when
// this process's environment sets GOMAXPROCS, which every process then
// inherits as it is).
func sharedCoresEnv(processes int) []string {
	each, ok := localcluster.CoresShare(os.Environ(), runtime.GOMAXPROCS(0), processes)
	if !ok {
		return nil
	}
	return []string{localcluster.EnvGoMaxProcs + "=" + strconv.Itoa(each)}
}

// brokerEnv names, in this test binary run as a broker, the port to serve
// on (see TestMain).
const brokerEnv = "CLUSTERBENCH_BROKER_PORT"

// brokerDirEnv names, in this test binary run as a broker, the directory
// it keeps its log in.
const brokerDirEnv = "CLUSTERBENCH_BROKER_DIR"

// broker is a kfake broker in a process of its own: this test binary run
// again with brokerEnv set, so its CPU is measured apart.
type broker struct {
	proc *harness.Process
	addr string
	dir  string // where it keeps its log
}

func startBroker(tb testing.TB, env ...string) *broker {
	tb.Helper()
	port := harness.Port(tb)
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	b := &broker{addr: "127.0.0.1:" + strconv.Itoa(port), dir: filepath.Join(tb.TempDir(), "kafka-data")}
	b.proc = startProcess(tb, "broker", self, append([]string{brokerEnv + "=" + strconv.Itoa(port), brokerDirEnv + "=" + b.dir}, env...), "-test.run", "^$")
	waitFor(tb, "the broker", 30*time.Second, func() bool {
		if b.proc.Exited() {
			tb.Fatalf("the broker exited: %v\n%s", b.proc.Wait(), b.proc.Output())
		}
		return dialable(b.addr)
	})
	return b
}

// TestMain runs the tests, or, with brokerEnv set, serves a kfake broker
// until SIGTERM (startBroker), or, with collyEnv set, crawls as a plain
// Colly crawler (runColly).
func TestMain(m *testing.M) {
	if port := os.Getenv(brokerEnv); port != "" {
		os.Exit(serveBroker(port))
	}
	if site := os.Getenv(collyEnv); site != "" {
		os.Exit(crawlWithColly(site))
	}
	os.Exit(m.Run())
}

func serveBroker(port string) int {
	p, err := strconv.Atoi(port)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: %v\n", brokerEnv, port, err)
		return 2
	}
	// Its log in files, as the local cluster keeps it by default.
	k, err := harness.LaunchKafka(harness.KafkaOptions{Ports: []int{p}, DataDir: os.Getenv(brokerDirEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer k.Close()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	fmt.Printf("broker on %s\n", k.Hosts())
	<-stop
	return 0
}
