package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
)

func TestMain(m *testing.M) { bins.Main(m) }

// bins are the four component binaries, built once per test binary.
var bins = harness.Binaries{Packages: []string{"./kafka-monitor/cmd/kafka-monitor", "./redis-monitor/cmd/redis-monitor",
	"./crawler/cmd/crawler", "./rest/cmd/rest"}}

// binary returns the path of a component binary (kafka-monitor,
// redis-monitor, crawler, rest), building all four the first time.
func binary(tb testing.TB, name string) string {
	tb.Helper()
	return bins.Path(tb, name)
}

// cluster is one test's services (redis-server, ZooKeeper, kfake) and the
// component processes run against them.
type cluster struct {
	tb       testing.TB
	redis    *harness.Redis
	rdb      *redis.Client
	zk       *harness.ZooKeeper
	kafka    *harness.Kafka
	restPort int
	env      map[string]string
	procs    harness.Processes
}

// newCluster starts the services and the four components (one crawler of
// the link spider), with the common settings and overrides, and waits for
// the REST service to report Kafka and Redis connected.
func newCluster(tb testing.TB, ropts harness.RedisOptions, overrides map[string]string) *cluster {
	tb.Helper()
	c := &cluster{tb: tb}
	c.redis = harness.StartRedis(tb, ropts)
	c.rdb = c.redis.TestClient(tb)
	c.zk = harness.StartZooKeeper(tb)
	c.kafka = harness.StartKafka(tb)
	port := harness.Port(tb)
	c.restPort = port
	c.env = harness.ClusterSettings(c.redis.Port, c.kafka.Hosts(), c.zk.Addr)
	maps.Copy(c.env, map[string]string{
		"KAFKA_CONSUMER_AUTO_OFFSET_RESET": "earliest", "SCHEDULER_QUEUE_REFRESH": "1",
		"FLASK_PORT": strconv.Itoa(port), "FLASK_HOST": "127.0.0.1",
		"STATS_DUMP": "1", "SLEEP_TIME": "0.05", "HEARTBEAT_TIMEOUT": "30", "WAIT_FOR_RESPONSE_TIME": "10",
	})
	maps.Copy(c.env, overrides)
	c.start("kafka-monitor", "kafka-monitor", "run")
	c.start("redis-monitor", "redis-monitor")
	c.start("crawler", "crawler", "--spider", "link")
	c.start("rest", "rest")
	waitFor(tb, "the REST service to report Kafka and Redis connected", 30*time.Second, func() bool {
		resp, err := http.Get(c.restURL("/"))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st map[string]any
		return json.NewDecoder(resp.Body).Decode(&st) == nil && st["node_health"] == "GREEN"
	})
	return c
}

func (c *cluster) restURL(path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(c.restPort) + path
}

func (c *cluster) environ() []string { return harness.Environ(c.env) }

// start runs a component binary with the cluster's settings; on cleanup it
// gets SIGTERM (SIGKILL after 10 s), and its output is shown if the test
// failed. It must not exit before.
func (c *cluster) start(name, bin string, args ...string) *harness.Process {
	c.tb.Helper()
	p := harness.StartProcess(c.tb, harness.ProcessSpec{Name: name, Path: binary(c.tb, bin), Args: args, Env: c.environ(),
		StopGrace: 10 * time.Second, Supervise: true})
	c.procs = append(c.procs, p)
	return p
}

// proc is the process started as name.
func (c *cluster) proc(name string) *harness.Process { return c.procs.Get(c.tb, name) }

// feed runs `kafka-monitor feed '<json>'` as an operator does; it must exit 0.
func (c *cluster) feed(req map[string]any) {
	c.tb.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(c.tb, "kafka-monitor"), "feed", string(body))
	cmd.Env = c.environ()
	cmd.Dir = c.tb.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		c.tb.Fatalf("kafka-monitor feed %s: %v\n%s", body, err, out)
	}
}

// postFeed sends req to the REST service's /feed and returns its answer.
func (c *cluster) postFeed(req map[string]any) map[string]any {
	c.tb.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	resp, err := http.Post(c.restURL("/feed"), "application/json", bytes.NewReader(body))
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var ans map[string]any
	if err := json.Unmarshal(raw, &ans); err != nil {
		c.tb.Fatalf("POST /feed %s: status %d, not JSON: %.500s", body, resp.StatusCode, raw)
	}
	if resp.StatusCode != http.StatusOK || ans["status"] != "SUCCESS" {
		c.tb.Fatalf("POST /feed %s: status %d: %s", body, resp.StatusCode, raw)
	}
	return ans
}

// topic collects every message of a topic, from its start, in the background.
type topic struct {
	name string
	mu   sync.Mutex
	msgs []map[string]any
	bad  []string
}

// watch starts reading a topic (creating it if need be) until the test ends.
func (c *cluster) watch(name string) *topic {
	tb := c.tb
	tb.Helper()
	cfg := kafkaclient.Config{
		Brokers: c.kafka.Addrs, TopicPrefix: "demo", ConnTimeout: 5 * time.Second, BatchLinger: time.Millisecond,
		MaxRequestBytes: 1 << 20, StartAtEarliest: true, FetchMaxBytes: 10 << 20,
		FetchMaxWait: 50 * time.Millisecond, Partitions: 1, ReplicationFactor: 1,
	}
	full := cfg.Topic(name)
	waitFor(tb, "topic "+full, 10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return cfg.EnsureTopics(ctx, kafkaclient.TopicSpec{Name: full, Partitions: 1}) == nil
	})
	t := &topic{name: full}
	// Registered before ReadTopic's, so it runs after the reading ends.
	tb.Cleanup(func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if len(t.bad) > 0 {
			tb.Errorf("%d messages on %s are not JSON objects, first: %.300s", len(t.bad), full, t.bad[0])
		}
	})
	harness.ReadTopic(context.Background(), tb, cfg, full, 1, func(v []byte) {
		var m map[string]any
		t.mu.Lock()
		if err := json.Unmarshal(v, &m); err != nil {
			t.bad = append(t.bad, string(v))
		} else {
			t.msgs = append(t.msgs, m)
		}
		t.mu.Unlock()
	})
	return t
}

// all returns the messages read so far that keep says to.
func (t *topic) all(keep func(map[string]any) bool) []map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []map[string]any
	for _, m := range t.msgs {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// await waits for a message keep accepts and returns the first.
func (t *topic) await(tb testing.TB, what string, timeout time.Duration, keep func(map[string]any) bool) map[string]any {
	tb.Helper()
	var got map[string]any
	waitFor(tb, what+" on "+t.name, timeout, func() bool {
		if ms := t.all(keep); len(ms) > 0 {
			got = ms[0]
			return true
		}
		return false
	})
	return got
}

// byUUID accepts answers with that uuid.
func byUUID(uuid string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["uuid"] == uuid }
}

// byCrawl accepts crawl results of that crawlid.
func byCrawl(crawlID string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["crawlid"] == crawlID && m["url"] != nil }
}

// waitFor polls cond until it holds, failing after timeout.
func waitFor(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	harness.WaitFor(tb, what, timeout, cond)
}

// drained waits until the link spider has nothing queued and nothing leased.
func (c *cluster) drained(timeout time.Duration) {
	c.tb.Helper()
	ctx := context.Background()
	waitFor(c.tb, "the queues and leases to empty", timeout, func() bool {
		pipe := c.rdb.TxPipeline()
		keys := pipe.Keys(ctx, "link:*:queue")
		items := pipe.HLen(ctx, "leases:link:items")
		if _, err := pipe.Exec(ctx); err != nil {
			return false
		}
		return len(keys.Val()) == 0 && items.Val() == 0
	})
}

// queued returns the crawlids of the requests in a domain queue, one per request.
func (c *cluster) queued(key string) []string {
	c.tb.Helper()
	members, err := c.rdb.ZRange(context.Background(), key, 0, -1).Result()
	if err != nil {
		c.tb.Fatal(err)
	}
	var out []string
	for _, m := range members {
		var r struct {
			CrawlID string `json:"crawlid"`
		}
		if err := json.Unmarshal([]byte(m), &r); err != nil {
			c.tb.Fatalf("queued request is not JSON: %v: %.300s", err, m)
		}
		out = append(out, r.CrawlID)
	}
	return out
}

// lastDomainConfig returns the fields of the crawler's latest "Domain config
// changed" log line (nil before any).
func (c *cluster) lastDomainConfig() map[string]any {
	var last map[string]any
	for _, line := range strings.Split(c.proc("crawler").Output().String(), "\n") {
		if !strings.Contains(line, "Domain config changed") {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			last = m
		}
	}
	return last
}

// --- shape checks -----------------------------------------------------------

// has checks that m has each key with a value of the kind named: "string",
// "number", "object", "array", "bool", "any".
func has(tb testing.TB, what string, m map[string]any, kinds map[string]string) {
	tb.Helper()
	for k, kind := range kinds {
		v, ok := m[k]
		if !ok {
			tb.Errorf("%s: no %q in %s", what, k, brief(m))
			continue
		}
		var okKind bool
		switch kind {
		case "string":
			_, okKind = v.(string)
		case "number":
			_, okKind = v.(float64)
		case "object":
			_, okKind = v.(map[string]any)
		case "array":
			_, okKind = v.([]any)
		case "bool":
			_, okKind = v.(bool)
		case "any":
			okKind = true
		}
		if !okKind {
			tb.Errorf("%s: %q is %T (%v), want a %s", what, k, v, v, kind)
		}
	}
}

// obj returns m[k] as an object (failing the test if it is not one).
func obj(tb testing.TB, m map[string]any, k string) map[string]any {
	tb.Helper()
	o, ok := m[k].(map[string]any)
	if !ok {
		tb.Fatalf("%q is %T, want an object, in %s", k, m[k], brief(m))
	}
	return o
}

// windows checks a rolling-window counter object: keys are seconds or
// "lifetime", values numbers.
func windows(tb testing.TB, what string, m map[string]any) {
	tb.Helper()
	for k, v := range m {
		if _, err := strconv.Atoi(k); err != nil && k != "lifetime" {
			tb.Errorf("%s: window key %q is neither seconds nor lifetime", what, k)
		}
		if _, ok := v.(float64); !ok {
			tb.Errorf("%s: window %q is %T, want a number", what, k, v)
		}
	}
}

// nodes checks a "nodes" object: host -> list of ids.
func nodes(tb testing.TB, what string, m map[string]any) {
	tb.Helper()
	n := obj(tb, m, "nodes")
	if len(n) == 0 {
		tb.Errorf("%s: no nodes", what)
	}
	for host, ids := range n {
		list, ok := ids.([]any)
		if !ok || len(list) == 0 {
			tb.Errorf("%s: nodes[%q] is %v, want a non-empty list of ids", what, host, ids)
		}
	}
}

func brief(m map[string]any) string {
	b, _ := json.Marshal(m)
	return harness.Tail(string(b), 1500)
}
