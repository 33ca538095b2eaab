package clusterbench_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/ops/localcluster"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
)

// loopbackFetchEnv lets the crawlers fetch the benchmarks' loopback sites
// once they refuse internal addresses by default (the SSRF guard): the same
// opt-out the local cluster gives its crawlers with --test-site.
const loopbackFetchEnv = "FETCH_ALLOWED_NETWORKS=" + localcluster.LoopbackNetworks

// components are the processes whose peak memory is reported, by the name
// the launcher gives them.
var components = []struct{ name, metric string }{
	{"kafka-monitor", "kafka-monitor-VmHWM-MB"},
	{"redis-monitor", "redis-monitor-VmHWM-MB"},
	{"crawler-link-1", "crawler-VmHWM-MB"},
	{"rest", "rest-VmHWM-MB"},
}

// BenchmarkClusterWorkload starts the whole cluster as `make run` does (the
// launcher, the embedded kfake broker, redis-server when installed else
// miniredis, and the four component binaries, one crawler) and, per
// iteration:
//
//   - feeds 100 crawl requests, one at a time, each for a domain never seen
//     before (a site on its own loopback address), into demo.incoming, and
//     times each from the produce call to its result on
//     demo.crawled_firehose: Kafka Monitor, Redis queue, crawler, fetch,
//     Kafka (feed-p50-ms, feed-p99-ms);
//   - then a short mixed load: 2,000 /feed crawl requests over 16 REST
//     clients and 2,000 through Kafka (maxdepth 0, pages of 4 loopback
//     sites), 200 info requests answered by the Redis Monitor, until every
//     page is on the firehose.
//
// At the end it reads VmHWM (peak resident set) of each component from
// /proc/<pid>/status. The throttle is opened (QUEUE_HITS 100000,
// QUEUE_MODERATED false) so the crawl is not limited to 10 pages a minute
// per domain; everything else is the default.
func BenchmarkClusterWorkload(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	bin := buildBinaries(b)
	c := startCluster(b, bin)
	sites := make([]*site, 4)
	for i := range sites {
		sites[i] = startSite(b, fmt.Sprintf("127.0.0.%d", i+1))
	}

	// Warm up: connections, topics, the scripts in Redis.
	c.feedKafka(b, sites[0].url("/warm"), "warm-up")
	c.waitResults(b, func(r result) bool { return r.CrawlID == "warm-up" }, 1, 60*time.Second)

	var latencies []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range 100 {
			s := startSite(b, freshIP())
			crawlID := fmt.Sprintf("new-domain-%d-%d", i, j)
			start := time.Now()
			c.feedKafka(b, s.url("/"), crawlID)
			c.waitResults(b, func(r result) bool { return r.CrawlID == crawlID }, 1, 30*time.Second)
			latencies = append(latencies, time.Since(start))
			s.close()
		}
		b.StopTimer()
		c.mixedLoad(b, sites, i)
		b.StartTimer()
	}
	b.StopTimer()
	ms := harness.Quantiles(latencies)
	b.ReportMetric(ms(0.50), "feed-p50-ms")
	b.ReportMetric(ms(0.99), "feed-p99-ms")
	for _, comp := range components {
		pid, ok := c.pid(comp.name)
		if !ok {
			b.Fatalf("no pid for %s in the launcher's output:\n%s", comp.name, c.out.tail())
		}
		hwm, err := procStatusMB(pid, "VmHWM")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(hwm, comp.metric)
	}
}

// buildBinaries builds the component binaries, and the main packages in
// extra (paths from the workspace root), into a temporary directory with go
// build from the workspace root.
func buildBinaries(tb testing.TB, extra ...string) string {
	tb.Helper()
	return harness.BuildBinaries(tb, append([]string{"./kafka-monitor/cmd/kafka-monitor", "./redis-monitor/cmd/redis-monitor",
		"./crawler/cmd/crawler", "./rest/cmd/rest"}, extra...)...)
}

type cluster struct {
	out     *launcherOutput
	kc      kafkaclient.Config
	writer  *kafka.Writer
	rest    string
	results chan result
}

type result struct {
	URL     string `json:"url"`
	CrawlID string `json:"crawlid"`
}

func startCluster(tb testing.TB, bin string) *cluster {
	tb.Helper()
	cfg := localcluster.DefaultConfig()
	cfg.KafkaPort, cfg.RedisPort, cfg.RESTPort = harness.Port(tb), harness.Port(tb), harness.Port(tb)
	cfg.BinDir = bin
	cfg.DataDir = ""
	if _, err := exec.LookPath("redis-server"); err == nil {
		cfg.Redis = localcluster.RedisSystem
	}
	cfg.Env = append(embeddedEnv(), "QUEUE_HITS=100000", "QUEUE_MODERATED=false", loopbackFetchEnv)
	out := &launcherOutput{}
	cfg.Out = out
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- localcluster.Run(ctx, cfg) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			tb.Errorf("the cluster did not stop within 60 s")
		}
	})

	c := &cluster{out: out, rest: "http://127.0.0.1:" + strconv.Itoa(cfg.RESTPort), results: make(chan result, 1<<16)}
	deadline := time.Now().Add(60 * time.Second)
	for !c.restGreen() {
		select {
		case err := <-done:
			tb.Fatalf("the cluster stopped: %v\n%s", err, out.tail())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the REST service is not GREEN after 60 s:\n%s", out.tail())
		}
	}
	c.kc = kafkaclient.Config{
		Brokers: []string{"127.0.0.1:" + strconv.Itoa(cfg.KafkaPort)}, TopicPrefix: "demo", ConnTimeout: 5 * time.Second,
		BatchLinger: time.Millisecond, MaxRequestBytes: 1 << 20, StartAtEarliest: true, FetchMaxBytes: 10 << 20,
		FetchMaxWait: 20 * time.Millisecond, Partitions: 3, ReplicationFactor: 1,
	}
	c.writer = c.kc.NewWriter(c.kc.Topic("incoming"))
	c.writer.AllowAutoTopicCreation = true
	tb.Cleanup(func() { c.writer.Close() })
	c.readFirehose(tb)
	return c
}

func (c *cluster) restGreen() bool {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(c.rest + "/")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var state struct {
		NodeHealth string `json:"node_health"`
	}
	return json.NewDecoder(resp.Body).Decode(&state) == nil && state.NodeHealth == "GREEN"
}

// readFirehose reads every partition of demo.crawled_firehose from its start
// into c.results until the benchmark ends.
func (c *cluster) readFirehose(tb testing.TB) {
	tb.Helper()
	topic := c.kc.Topic("crawled_firehose")
	partitions := harness.TopicPartitions(context.Background(), tb, c.kc, topic, 30*time.Second)
	harness.ReadTopic(context.Background(), tb, c.kc, topic, partitions, func(v []byte) {
		var res result
		if json.Unmarshal(v, &res) == nil {
			c.results <- res
		}
	})
}

// waitResults waits until n results matching match have been read.
func (c *cluster) waitResults(tb testing.TB, match func(result) bool, n int, timeout time.Duration) {
	tb.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	got := 0
	for got < n {
		select {
		case r := <-c.results:
			if match(r) {
				got++
			}
		case <-timer.C:
			tb.Fatalf("%d of %d results within %s; launcher output:\n%s", got, n, timeout, c.out.tail())
		}
	}
}

func crawlRequest(url, crawlID string) []byte {
	b, _ := json.Marshal(map[string]any{"url": url, "appid": "bench", "crawlid": crawlID, "maxdepth": 0, "priority": 5})
	return b
}

// feedKafka produces crawl requests to demo.incoming, as `kafka-monitor
// feed` does.
func (c *cluster) feedKafka(tb testing.TB, url, crawlID string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.writer.WriteMessages(ctx, kafka.Message{Value: crawlRequest(url, crawlID)}); err != nil {
		tb.Fatalf("produce to %s: %v", c.writer.Topic, err)
	}
}

// mixedLoad: REST and Kafka crawl requests and Redis Monitor info requests,
// until every page is crawled.
func (c *cluster) mixedLoad(tb testing.TB, sites []*site, iteration int) {
	tb.Helper()
	const perPath = 2000
	crawlID := "load-" + strconv.Itoa(iteration)
	url := func(i int) string {
		return sites[i%len(sites)].url(fmt.Sprintf("/page/%d?i=%d", i/len(sites), i))
	}
	var msgs []kafka.Message
	for i := range perPath {
		msgs = append(msgs, kafka.Message{Value: crawlRequest(url(i), crawlID)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.writer.WriteMessages(ctx, msgs...); err != nil {
		tb.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var next atomic.Int64
	var failed atomic.Value
	post := func(body []byte) {
		resp, err := client.Post(c.rest+"/feed", "application/json", bytes.NewReader(body))
		if err != nil {
			failed.Store(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			failed.Store(fmt.Errorf("POST /feed: status %d", resp.StatusCode))
		}
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= perPath+200 {
					return
				}
				if i >= perPath {
					info, _ := json.Marshal(map[string]any{"action": "info", "appid": "bench", "crawlid": crawlID,
						"spiderid": "link", "uuid": fmt.Sprintf("info-%d-%d", iteration, i)})
					post(info)
					continue
				}
				post(crawlRequest(url(perPath+i), crawlID))
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatal(err)
	}
	c.waitResults(tb, func(r result) bool { return r.CrawlID == crawlID }, 2*perPath, 5*time.Minute)
}

// pid is the process id of the launcher's child name.
func (c *cluster) pid(name string) (int, bool) {
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	pid, ok := c.out.pids[name]
	return pid, ok
}

// launcherOutput keeps the launcher's last lines and the pids it reports
// ("started kafka-monitor (pid 1234): ...").
type launcherOutput struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	pids    map[string]int
}

var startedRE = regexp.MustCompile(`started (\S+) \(pid (\d+)\)`)

func (o *launcherOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, p...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		line := string(o.partial[:i])
		o.partial = o.partial[i+1:]
		if m := startedRE.FindStringSubmatch(line); m != nil {
			if o.pids == nil {
				o.pids = map[string]int{}
			}
			o.pids[m[1]], _ = strconv.Atoi(m[2])
		}
		o.lines = append(o.lines, line)
		if len(o.lines) > 400 {
			o.lines = slices.Clone(o.lines[200:])
		}
	}
	return len(p), nil
}

// contains reports whether a whole line read so far holds s.
func (o *launcherOutput) contains(s string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, line := range o.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// String is the launcher's last lines, for a failed test's log.
func (o *launcherOutput) String() string { return o.tail() }

func (o *launcherOutput) tail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	lines := o.lines
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	return strings.Join(lines, "\n")
}

// procStatusMB is a memory figure of a process in MB from
// /proc/<pid>/status: field VmHWM (peak resident set) or VmRSS (resident set).
func procStatusMB(pid int, field string) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 2 && fields[1] == "kB" {
				kb, err := strconv.ParseFloat(fields[0], 64)
				return kb / 1024, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// site is a small web site on one loopback address: every path is a page.
type site struct {
	srv  *http.Server
	addr string
}

func startSite(tb testing.TB, ip string) *site {
	tb.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &site{addr: ln.Addr().String(), srv: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><body><p>"+r.URL.Path+"</p><a href=\"/\">home</a></body></html>")
	}), ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	tb.Cleanup(s.close)
	return s
}

func (s *site) url(path string) string { return "http://" + s.addr + path }
func (s *site) close()                 { _ = s.srv.Close() }

// freshIP returns a loopback address no site of this process used before:
// a domain the crawler has never seen.
func freshIP() string {
	n := int(ipSeq.Add(1)) - 1
	return fmt.Sprintf("127.3.%d.%d", n/250, n%250+1)
}

var ipSeq atomic.Int64

func waitFor(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	harness.WaitFor(tb, what, timeout, cond)
}
