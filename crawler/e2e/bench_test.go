package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// Benchmarks of the crawler binary. Each reports its figure with
// b.ReportMetric; run them with
//
//	go test -run '^$' -bench . -benchtime 1x ./e2e/
//
// The test site, Redis, the kfake broker and the result reader share the
// machine with the crawlers, as they would not in production.

// benchSettings are the crawler settings benchmarks add: warnings only, so
// logging does not dominate.
var benchSettings = map[string]string{"SC_LOG_LEVEL": "WARNING"}

// freshIP returns a loopback address no site of this test binary used
// before: a domain no crawler has seen (127.1.0.1, 127.1.0.2, ...).
func freshIP() string {
	n := int(ipSeq.Add(1)) - 1
	return fmt.Sprintf("127.1.%d.%d", n/250, n%250+1)
}

var ipSeq atomic.Int64

// queueAll puts reqs in their queues without announcing them (pipelined,
// in chunks) and returns the queue keys, spider id by key.
func (c *cluster) queueAll(tb testing.TB, reqs []*crawlrequest.Request) map[string]string {
	tb.Helper()
	ctx := context.Background()
	keys := map[string]string{}
	for chunk := range slices.Chunk(reqs, 1000) {
		pipe := c.rdb.Pipeline()
		for _, r := range chunk {
			key, member := harness.QueueEntry(tb, r)
			pipe.ZAdd(ctx, key, redis.Z{Score: r.Score(), Member: member})
			keys[key] = r.SpiderID
		}
		if _, err := pipe.Exec(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	return keys
}

// announce publishes queue keys as the Kafka Monitor does for new queues.
func (c *cluster) announce(tb testing.TB, keys map[string]string) {
	tb.Helper()
	pipe := c.rdb.Pipeline()
	for key, spiderID := range keys {
		pipe.Publish(context.Background(), rediskeys.QueueChannel(spiderID), key)
	}
	if _, err := pipe.Exec(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// countResults reads n more results from the firehose without decoding them.
func (c *cluster) countResults(tb testing.TB, n int, timeout time.Duration) {
	tb.Helper()
	r := c.firehose(tb)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for i := range n {
		if _, err := r.ReadMessage(ctx); err != nil {
			tb.Fatalf("after %d of %d results: %v", i, n, err)
		}
	}
}

// BenchmarkPagesPerSecond: crawlers with the throttle out of the way and a
// backlog of pre-queued requests (maxdepth 0) over 4 sites of 250 pages
// each; pages/s from the moment the queues are announced until every result
// is in Kafka. Settings: the defaults (CONCURRENT_REQUESTS 16 per crawler,
// CONCURRENT_REQUESTS_PER_DOMAIN 8, KAFKA_PRODUCER_BATCH_LINGER_MS 25), and
// a tuned variant with more requests in flight and a 2 ms linger.
func BenchmarkPagesPerSecond(b *testing.B) {
	const perIteration = 4000
	tuned := map[string]string{"CONCURRENT_REQUESTS": "64", "CONCURRENT_REQUESTS_PER_DOMAIN": "16", "KAFKA_PRODUCER_BATCH_LINGER_MS": "2"}
	for _, bc := range []struct {
		name     string
		crawlers int
		settings map[string]string
	}{
		{"crawlers=1/defaults", 1, map[string]string{"KAFKA_PRODUCER_BATCH_LINGER_MS": "25"}},
		{"crawlers=1/tuned", 1, tuned},
		{"crawlers=2/defaults", 2, map[string]string{"KAFKA_PRODUCER_BATCH_LINGER_MS": "25"}},
		{"crawlers=2/tuned", 2, tuned},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := newCluster(b)
			var sites []*testsite.Site
			for i := 1; i <= 4; i++ {
				sites = append(sites, testsite.StartAt(b, fmt.Sprintf("127.0.0.%d:0", i), testsite.WithPages(250), testsite.WithMaxHits(1000)))
			}
			requests := func(n int, crawlID string) []*crawlrequest.Request {
				out := make([]*crawlrequest.Request, n)
				for i := range out {
					site := sites[i%len(sites)]
					out[i] = crawl("link", site.URL("/page/"+strconv.Itoa(i/len(sites)%250+1)), crawlID, 0)
					// Queue members are a set: requests for one URL must differ.
					out[i].Attrs = json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`)
				}
				return out
			}
			var crawlers []*crawler
			for i := range bc.crawlers {
				crawlers = append(crawlers, c.startCrawler(b, fmt.Sprintf("crawler-%d", i+1), with(bc.settings, "SC_LOG_LEVEL", benchSettings["SC_LOG_LEVEL"])))
			}
			cpu := func() (total time.Duration) {
				for _, p := range crawlers {
					total += cpuTime(b, p.pid())
				}
				return total
			}
			// Warm up: connections, the Kafka topic, the scripts in Redis.
			warm := requests(200, "warm-up")
			c.announce(b, c.queueAll(b, warm))
			c.countResults(b, len(warm), 60*time.Second)

			var elapsed, used, harnessUsed time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				keys := c.queueAll(b, requests(perIteration, "bench-"+strconv.Itoa(i)))
				b.StartTimer()
				start, cpuStart, harnessStart := time.Now(), cpu(), cpuTime(b, os.Getpid())
				c.announce(b, keys)
				c.countResults(b, perIteration, 120*time.Second)
				elapsed += time.Since(start)
				used += cpu() - cpuStart
				harnessUsed += cpuTime(b, os.Getpid()) - harnessStart
			}
			pages := float64(b.N * perIteration)
			b.ReportMetric(pages/elapsed.Seconds(), "pages/s")
			// What a page costs the crawlers, whatever else runs on the
			// machine, and what it costs this process (sites, broker, reader).
			b.ReportMetric(float64(used.Microseconds())/pages, "crawler-cpu-µs/page")
			b.ReportMetric(float64(harnessUsed.Microseconds())/pages, "harness-cpu-µs/page")
		})
	}
}

// BenchmarkNewDomainLatency: an idle crawler; a request for a domain never
// seen before (a new site on its own loopback address) is queued and
// announced as the Kafka Monitor does; the time until the site sees the
// fetch. 100 domains per iteration; p50 and p99 over all of them.
func BenchmarkNewDomainLatency(b *testing.B) {
	const perIteration = 100
	c := newCluster(b)
	c.startCrawler(b, "crawler", benchSettings)
	sample := func() time.Duration {
		fetched := make(chan time.Time, 1)
		site, err := testsite.New(freshIP()+":0", testsite.WithHandler("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case fetched <- time.Now():
			default:
			}
			_, _ = w.Write([]byte("<html><body>new domain</body></html>"))
		})))
		if err != nil {
			b.Fatal(err)
		}
		defer site.Close()
		start := time.Now()
		c.seed(b, crawl("link", site.URL("/"), "new-domains", 0))
		select {
		case at := <-fetched:
			return at.Sub(start)
		case <-time.After(30 * time.Second):
			b.Fatalf("no fetch of %s within 30 s", site.URL("/"))
			return 0
		}
	}
	sample() // warm-up: the crawler is subscribed and connected to Redis and Kafka
	b.ResetTimer()
	var latencies []time.Duration
	for i := 0; i < b.N; i++ {
		for range perIteration {
			latencies = append(latencies, sample())
		}
	}
	b.StopTimer()
	ms := harness.Quantiles(latencies)
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	b.ReportMetric(ms(1), "max-ms")
}

// BenchmarkThrottleUse: two crawlers, a backlog on one domain throttled to
// QUEUE_HITS per QUEUE_WINDOW; the share of the allowed fetches the crawl
// makes over several windows, counted from the first fetch (each window's
// count capped at QUEUE_HITS). Each iteration uses a new domain, so it
// starts with an empty throttle window.
func BenchmarkThrottleUse(b *testing.B) {
	const hits, window, windows = 10, time.Second, 4
	for _, moderated := range []bool{false, true} {
		b.Run("moderated="+strconv.FormatBool(moderated), func(b *testing.B) {
			c := newCluster(b)
			for i := range 2 {
				c.startCrawler(b, fmt.Sprintf("crawler-%d", i+1), with(benchSettings,
					"QUEUE_HITS", strconv.Itoa(hits), "QUEUE_WINDOW", strconv.Itoa(int(window.Seconds())),
					"QUEUE_MODERATED", strconv.FormatBool(moderated)))
			}
			var used, allowed int
			for i := 0; i < b.N; i++ {
				site := testsite.StartAt(b, freshIP()+":0", testsite.WithPages((windows+1)*hits))
				var reqs []*crawlrequest.Request
				for p := 1; p <= (windows+1)*hits; p++ {
					reqs = append(reqs, crawl("link", site.URL("/page/"+strconv.Itoa(p)), "throttle-"+strconv.Itoa(i), 0))
				}
				keys := c.queueAll(b, reqs)
				c.announce(b, keys)
				// Until a fetch lands past the measured windows: the backlog
				// holds more than they allow.
				var times []time.Time
				harness.WaitFor(b, "the measured windows to pass", windows*window+30*time.Second, func() bool {
					times = fetchTimes(site)
					return len(times) > 0 && times[len(times)-1].Sub(times[0]) >= windows*window
				})
				for k := range windows {
					from, to := times[0].Add(time.Duration(k)*window), times[0].Add(time.Duration(k+1)*window)
					n := 0
					for _, t := range times {
						if !t.Before(from) && t.Before(to) {
							n++
						}
					}
					used += min(n, hits)
					allowed += hits
				}
				for key := range keys {
					c.rdb.Del(context.Background(), key) // the rest of the backlog
				}
			}
			b.ReportMetric(100*float64(used)/float64(allowed), "use-%")
		})
	}
}

// BenchmarkIdleRSS: the crawler binary idle (no queues) for 3 seconds
// after start; its resident memory (VmRSS, and the peak VmHWM) at the end.
func BenchmarkIdleRSS(b *testing.B) {
	c := newCluster(b)
	var rss, hwm float64
	for i := 0; i < b.N; i++ {
		p := c.startCrawler(b, "crawler-"+strconv.Itoa(i), benchSettings)
		pattern := rediskeys.CrawlerHeartbeatKey("*", "link", "*")
		harness.WaitFor(b, "the crawler's heartbeat", 30*time.Second, func() bool {
			keys, _ := c.rdb.Keys(context.Background(), pattern).Result()
			beats := 0
			for _, k := range keys {
				if strings.Count(k, ":") == strings.Count(pattern, ":") { // not a status code counter
					beats++
				}
			}
			return beats > i
		})
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond) // the measurement is the idle time itself
			if p.exited() {
				b.Fatalf("crawler exited: %v\n%s", p.Wait(), p.out.String())
			}
		}
		status := procStatus(b, p.pid())
		rss, hwm = max(rss, status["VmRSS"]), max(hwm, status["VmHWM"])
		if err := p.stop(10 * time.Second); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(rss, "VmRSS-MB")
	b.ReportMetric(hwm, "VmHWM-MB")
}

// procStatus reads the memory figures (kB) of /proc/<pid>/status in MB.
func procStatus(tb testing.TB, pid int) map[string]float64 {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(value)
		if !ok || len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		if kb, err := strconv.ParseFloat(fields[0], 64); err == nil {
			out[name] = kb / 1024
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// cpuTime returns the CPU time (user and system) a process used so far,
// from /proc/<pid>/stat in clock ticks of 10 ms (Linux's USER_HZ).
func cpuTime(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: count after it.
	_, rest, ok := strings.Cut(string(raw), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		tb.Fatalf("cannot read /proc/%d/stat: %q", pid, raw)
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime: fields 14 and 15 of the line
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			tb.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// BenchmarkLedgerCost: what the crawl ledger costs on the path every page
// takes (the fate in the lease acknowledgement). One crawler (tuned
// settings) crawls 4000 seeds (maxdepth 0) of one crawl, queued as the
// Kafka Monitor queues them; pages/s, and Redis CPU per page: used_cpu_sys +
// used_cpu_user of the test's redis-server (INFO cpu) from the seeding to
// the last result. Run it once with this tree's crawler and once with a
// crawler built from a tree before the ledger (E2E_CRAWLER_BINARY, see
// crawlerBinary) and compare.
func BenchmarkLedgerCost(b *testing.B) {
	const perIteration = 4000
	c := newCluster(b)
	site := testsite.StartAt(b, "127.0.0.1:0", testsite.WithPages(250), testsite.WithMaxHits(1000))
	requests := func(n int, crawlID string) []*crawlrequest.Request {
		out := make([]*crawlrequest.Request, n)
		for i := range out {
			out[i] = crawl("link", site.URL("/page/"+strconv.Itoa(i%250+1)), crawlID, 0)
			out[i].Attrs = json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`)
		}
		return out
	}
	tuned := map[string]string{"CONCURRENT_REQUESTS": "64", "CONCURRENT_REQUESTS_PER_DOMAIN": "64", "KAFKA_PRODUCER_BATCH_LINGER_MS": "2"}
	c.startCrawler(b, "crawler", with(tuned, "SC_LOG_LEVEL", benchSettings["SC_LOG_LEVEL"]))
	warm := requests(200, "warm-up")
	c.seed(b, warm...)
	c.countResults(b, len(warm), 60*time.Second)
	var elapsed, used time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		reqs := requests(perIteration, "ledger-"+strconv.Itoa(i))
		b.StartTimer()
		start, cpuStart := time.Now(), harness.RedisCPU(b, c.rdb)
		c.seed(b, reqs...)
		c.countResults(b, perIteration, 120*time.Second)
		elapsed += time.Since(start)
		used += harness.RedisCPU(b, c.rdb) - cpuStart
	}
	pages := float64(b.N * perIteration)
	b.ReportMetric(pages/elapsed.Seconds(), "pages/s")
	b.ReportMetric(float64(used.Microseconds())/pages, "redis-cpu-µs/page")
}
