package cluster_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// adminLine is the log line a component writes when its admin endpoint
// listens (on a free port here: ADMIN_ADDR is 127.0.0.1:0).
var adminLine = regexp.MustCompile(`Serving /metrics, /healthz and /readyz.*"address": ?"([^"]+)"`)

// adminURL is where process name serves its admin endpoint: the address it
// logged, or the REST service's own port.
func (c *cluster) adminURL(name string) string {
	c.tb.Helper()
	if name == "rest" {
		return c.restURL("")
	}
	var addr string
	waitFor(c.tb, name+"'s admin address in its log", 30*time.Second, func() bool {
		if m := adminLine.FindStringSubmatch(c.proc(name).Output().String()); m != nil {
			addr = m[1]
			return true
		}
		return false
	})
	return "http://" + addr
}

// scrape reads a /metrics page into sample values by series, written as
// name{label="value",...} with the labels sorted (histograms by their
// _count and _sum).
func scrape(tb testing.TB, base string) map[string]float64 {
	tb.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatalf("scrape %s: %v", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("scrape %s: %s", base, resp.Status)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		tb.Fatalf("scrape %s: not the Prometheus text format: %v", base, err)
	}
	out := map[string]float64{}
	for name, f := range families {
		vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, f)
		if err != nil {
			tb.Fatalf("scrape %s: %s: %v", base, name, err)
		}
		for _, s := range vec {
			out[s.Metric.String()] = float64(s.Value)
		}
	}
	return out
}

// ready GETs a readiness probe: its status code and the dependencies it
// says are not ok.
func ready(base string) (int, []string, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(base + "/readyz")
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string `json:"status"`
		Checks map[string]struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("readyz body %q: %w", body, err)
	}
	var down []string
	for name, ch := range r.Checks {
		if !ch.OK {
			if ch.Error == "" {
				return resp.StatusCode, nil, fmt.Errorf("%s is not ok and has no error: %s", name, body)
			}
			down = append(down, name)
		}
	}
	if (resp.StatusCode == http.StatusOK) != (len(down) == 0) || (r.Status == "ready") != (len(down) == 0) {
		return resp.StatusCode, down, fmt.Errorf("status %d %q with failing checks %v", resp.StatusCode, r.Status, down)
	}
	return resp.StatusCode, down, nil
}

// awaitReadiness waits until every admin endpoint's /readyz answers want
// and names exactly the dependency down (none when "").
func awaitReadiness(tb testing.TB, admins map[string]string, want int, down string) {
	tb.Helper()
	for name, base := range admins {
		var last string
		deadline := time.Now().Add(60 * time.Second)
		for {
			code, failing, err := ready(base)
			if err == nil && code == want && (down == "" && len(failing) == 0 || len(failing) == 1 && failing[0] == down) {
				break
			}
			last = fmt.Sprintf("%d %v %v", code, failing, err)
			if time.Now().After(deadline) {
				tb.Fatalf("%s /readyz: want %d with %q down, last %s", name, want, down, last)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestMetricsCountTheCrawlAndProbesFollowTheDependencies crawls the loopback
// test site with every component running as a process and checks each
// component's /metrics against the crawl's known page counts; then stops
// Redis and Kafka in turn and checks that every /readyz says so and
// recovers when they return.
func TestMetricsCountTheCrawlAndProbesFollowTheDependencies(t *testing.T) {
	s := testsite.StartAt(t, "127.0.0.7:0")
	c := newCluster(t, harness.RedisOptions{AppendOnly: true}, nil)
	admins := map[string]string{}
	for _, name := range []string{"kafka-monitor", "redis-monitor", "crawler", "rest"} {
		admins[name] = c.adminURL(name)
	}
	crawled := c.watch("crawled_firehose")
	outbound := c.watch("outbound_firehose")

	// The tree under /page/ to depth 2 (all 200s), through Kafka; a 404 and
	// a 500 page through REST and Kafka.
	c.feed(map[string]any{"url": s.URL("/"), "appid": appID, "crawlid": "metrics-tree", "maxdepth": 2, "allow_regex": []string{"/page/"}})
	if ans := c.postFeed(map[string]any{"url": s.URL("/status/404"), "appid": appID, "crawlid": "metrics-404"}); ans["error"] != nil {
		t.Fatalf("POST /feed: %v", ans)
	}
	c.feed(map[string]any{"url": s.URL("/status/500"), "appid": appID, "crawlid": "metrics-500"})
	tree := testsite.Reachable(s.URL("/"), 2, func(link string) bool { return notFile(link) && strings.Contains(link, "/page/") }, s)
	expectCrawl(t, crawled, "metrics-tree", tree, 60*time.Second)
	expectCrawl(t, crawled, "metrics-404", []string{s.URL("/status/404")}, 30*time.Second)
	expectCrawl(t, crawled, "metrics-500", []string{s.URL("/status/500")}, 30*time.Second)
	c.drained(30 * time.Second)
	// An info action and a stats request, each answered by the Redis Monitor.
	c.feed(map[string]any{"action": "info", "appid": appID, "uuid": "metrics-info", "crawlid": "metrics-tree", "spiderid": "link"})
	outbound.await(t, "the info answer", 30*time.Second, byUUID("metrics-info"))
	c.feed(map[string]any{"stats": "queue", "appid": appID, "uuid": "metrics-stats"})
	outbound.await(t, "the stats answer", 30*time.Second, byUUID("metrics-stats"))

	pages := float64(len(tree) + 2)
	expect := map[string]map[string]float64{
		"crawler": {
			`scrapy_crawler_responses_total{class="2xx", code="200", spider="link"}`: float64(len(tree)),
			`scrapy_crawler_responses_total{class="4xx", code="404", spider="link"}`: 1,
			`scrapy_crawler_responses_total{class="5xx", code="500", spider="link"}`: 1,
			`scrapy_crawler_pages_published_total{spider="link"}`:                    pages,
			`scrapy_crawler_pops_total{spider="link"}`:                               pages,
			`scrapy_crawler_fetch_duration_seconds_count{spider="link"}`:             pages,
			`scrapy_crawler_kafka_publish_duration_seconds_count{spider="link"}`:     pages,
			`scrapy_crawler_retries_total{spider="link"}`:                            0,
			`scrapy_crawler_kafka_publish_errors_total{spider="link"}`:               0,
			`scrapy_crawler_requests_in_flight{spider="link"}`:                       0,
			`scrapy_crawler_leases_held{spider="link"}`:                              0,
		},
		"kafka-monitor": {
			`scrapy_kafka_monitor_requests_total{outcome="stored", plugin="ScraperHandler"}`: 3,
			`scrapy_kafka_monitor_requests_total{outcome="stored", plugin="ActionHandler"}`:  1,
			`scrapy_kafka_monitor_requests_total{outcome="stored", plugin="StatsHandler"}`:   1,
			`scrapy_kafka_monitor_requests_total{outcome="failed", plugin="none"}`:           0,
			`scrapy_kafka_monitor_consumer_lag`:                                              0,
		},
		"redis-monitor": {
			`scrapy_redis_monitor_requests_total{outcome="handled", plugin="InfoMonitor"}`:  1,
			`scrapy_redis_monitor_requests_total{outcome="handled", plugin="StatsMonitor"}`: 1,
			`scrapy_redis_monitor_requests_total{outcome="dropped", plugin="InfoMonitor"}`:  0,
		},
		"rest": {
			`scrapy_rest_requests_total{code="200", endpoint="/feed"}`:     1,
			`scrapy_rest_request_duration_seconds_count{endpoint="/feed"}`: 1,
			`scrapy_rest_feed_waiting`:                                     0,
			`scrapy_rest_kafka_connected`:                                  1,
		},
	}
	for name, want := range expect {
		var got map[string]float64
		// Counts that lag the crawl by a moment (the last acknowledgement,
		// the consumer group's commit) get a few seconds.
		deadline := time.Now().Add(20 * time.Second)
		for {
			got = scrape(t, admins[name])
			wrong := 0
			for series, v := range want {
				if n, ok := got[series]; !ok || n != v {
					wrong++
				}
			}
			if wrong == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		for series, v := range want {
			if n, ok := got[series]; !ok {
				t.Errorf("%s /metrics has no %s", name, series)
			} else if n != v {
				t.Errorf("%s /metrics: %s = %v, want %v", name, series, n, v)
			}
		}
		if got[`go_goroutines`] == 0 || got[`process_resident_memory_bytes`] == 0 {
			t.Errorf("%s /metrics lacks the Go runtime or process collectors", name)
		}
		for series := range got {
			if strings.Contains(series, "127.0.0.7") || strings.Contains(series, "metrics-tree") {
				t.Errorf("%s: a URL, domain or crawl id is a label: %s", name, series)
			}
		}
	}
	if n := scrape(t, admins["rest"])[`scrapy_rest_requests_total{code="200", endpoint="/"}`]; n < 1 {
		t.Errorf("REST counted %v GET / (the harness polled it until GREEN)", n)
	}

	// Probes: everything up, then Redis away and back.
	awaitReadiness(t, admins, http.StatusOK, "")
	for name, base := range admins {
		if resp, err := http.Get(base + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("%s /healthz: %v %v", name, resp, err)
		}
	}
	c.redis.Stop()
	awaitReadiness(t, admins, http.StatusServiceUnavailable, "redis")
	if err := c.redis.Restart(); err != nil {
		t.Fatal(err)
	}
	awaitReadiness(t, admins, http.StatusOK, "")

	// Kafka away, and back on the same port (a new, empty broker: the
	// components create their topics again).
	_, port, _ := net.SplitHostPort(c.kafka.Addrs[0])
	var portNum int
	fmt.Sscan(port, &portNum)
	c.kafka.Cluster.Close()
	awaitReadiness(t, admins, http.StatusServiceUnavailable, "kafka")
	k, err := harness.LaunchKafka(harness.KafkaOptions{Ports: []int{portNum}})
	if err != nil {
		t.Fatal(err)
	}
	c.kafka.Cluster = k.Cluster // closed by the cleanup StartKafka registered, after the processes stop
	awaitReadiness(t, admins, http.StatusOK, "")
}
