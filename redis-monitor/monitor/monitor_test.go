package monitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/monitor"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	_ "github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

var redisServer harness.SharedRedis

func TestMain(m *testing.M) { redisServer.Main(m) }

// Test plugins: each owns a key prefix of its own.

// failing fails every attempt (or panics, for "panic:*" keys) and counts attempts.
type failing struct {
	plugin.Base
	pattern  string
	attempts atomic.Int64
}

func (p *failing) Name() string    { return "FailingMonitor" }
func (p *failing) Pattern() string { return p.pattern }
func (p *failing) Handle(_ context.Context, key, _ string) error {
	p.attempts.Add(1)
	if p.pattern == "panic:*" {
		panic("boom on " + key)
	}
	return errors.New("cannot handle " + key)
}

// slow blocks in Handle until released, then publishes an answer.
type slow struct {
	plugin.Base
	started chan string
	release chan struct{}
}

func (p *slow) Name() string    { return "SlowMonitor" }
func (p *slow) Pattern() string { return "slow:*" }
func (p *slow) Handle(ctx context.Context, key, value string) error {
	p.started <- key
	<-p.release
	return p.Publish(ctx, map[string]any{"appid": "testapp", "uuid": value, "key": key})
}

// outage returns plugin.ErrUnavailable until its service is up, then
// publishes an answer.
type outage struct {
	plugin.Base
	up       atomic.Bool
	attempts atomic.Int64
}

func (p *outage) Name() string    { return "OutageMonitor" }
func (p *outage) Pattern() string { return "outage:*" }
func (p *outage) Handle(ctx context.Context, key, value string) error {
	p.attempts.Add(1)
	if !p.up.Load() {
		return fmt.Errorf("handle %s: %w: the service is down", key, plugin.ErrUnavailable)
	}
	return p.Publish(ctx, map[string]any{"appid": "testapp", "uuid": value, "key": key})
}

var (
	outagePlugin  = &outage{}
	failingPlugin = &failing{pattern: "fail:*"}
	panicPlugin   = &failing{pattern: "panic:*"}
	slowPlugin    = &slow{started: make(chan string, 10), release: make(chan struct{})}
)

func init() {
	plugin.Register("test.Failing", func() plugin.Plugin { return failingPlugin })
	plugin.Register("test.Panicking", func() plugin.Plugin { return panicPlugin })
	plugin.Register("test.Slow", func() plugin.Plugin { return slowPlugin })
	plugin.Register("test.Outage", func() plugin.Plugin { return outagePlugin })
}

type cluster struct {
	kafka *harness.Kafka
	rdb   *redis.Client
}

func newCluster(t testing.TB, kopts ...harness.KafkaOptions) *cluster {
	t.Helper()
	opts := harness.KafkaOptions{NoAutoCreate: true}
	if len(kopts) > 0 {
		opts = kopts[0]
	}
	return &cluster{kafka: harness.StartKafka(t, opts), rdb: redisServer.EmptyClient(t)}
}

// settings are the monitor's defaults pointed at the test services, with
// quick cycles, plus overrides.
func (c *cluster) settings(t testing.TB, overrides map[string]string) *settings.Settings {
	t.Helper()
	env := map[string]string{
		"REDIS_HOST": "127.0.0.1", "REDIS_PORT": strconv.Itoa(redisServer.Port),
		"KAFKA_HOSTS": c.kafka.Hosts(), "KAFKA_TOPIC_PARTITIONS": "1", "KAFKA_PRODUCER_BATCH_LINGER_MS": "1",
		"ZOOKEEPER_HOSTS": "", "SLEEP_TIME": "0.01", "STATS_DUMP": "0",
		"PLUGINS": `{"plugins.info_monitor.InfoMonitor": 100, "plugins.stop_monitor.StopMonitor": 200, "plugins.expire_monitor.ExpireMonitor": 300}`,
	}
	for k, v := range overrides {
		env[k] = v
	}
	env["PLUGINS"] = only(t, env["PLUGINS"])
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	s, err := settings.Load(monitor.Settings(), settings.Options{Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// only turns a PLUGINS value into one that enables just those plugins:
// the setting merges with the defaults, so the others are set to null.
func only(t testing.TB, plugins string) string {
	t.Helper()
	enabled := map[string]any{}
	for name := range plugin.Plugins.Default() {
		enabled[name] = nil
	}
	if err := json.Unmarshal([]byte(plugins), &enabled); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(enabled)
	return string(b)
}

// running is a monitor running in the background.
type running struct {
	m    *monitor.Monitor
	stop context.CancelFunc
	done chan error
	log  *harness.OutputBuffer
	once sync.Once
}

func (c *cluster) start(t testing.TB, overrides map[string]string) *running {
	t.Helper()
	return c.run(t, c.settings(t, overrides), redisServer.TestClient(t))
}

// run starts a monitor of settings s on rdb in the background.
func (c *cluster) run(t testing.TB, s *settings.Settings, rdb redis.UniversalClient) *running {
	t.Helper()
	out := &harness.OutputBuffer{}
	cfg := logfactory.Settings("").Config(s)
	cfg.Output, cfg.Level, cfg.JSON = out, "DEBUG", true
	log, err := logfactory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m, err := monitor.New(ctx, s, log, rdb)
	if err != nil {
		t.Fatal(err)
	}
	r := &running{m: m, stop: cancel, done: make(chan error, 1), log: out}
	go func() { r.done <- m.Run(ctx) }()
	t.Cleanup(func() {
		r.shutdown(t)
		m.Close()
	})
	return r
}

// shutdown stops the monitor as SIGTERM does and waits for Run to return
// (once; later calls return at once).
func (r *running) shutdown(t testing.TB) {
	t.Helper()
	r.once.Do(func() {
		r.stop()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("monitor did not stop")
		}
	})
}

// shutdownAll shuts the monitors down and sums what count says of each;
// shares lists each one's count, for a failure message.
func shutdownAll(t testing.TB, monitors []*running, count func(*monitor.Monitor) int64) (total int64, shares string) {
	t.Helper()
	for _, r := range monitors {
		r.shutdown(t)
		total += count(r.m)
		shares += fmt.Sprintf(" %d", count(r.m))
	}
	return total, shares
}

func (c *cluster) kafkaConfig() kafkaclient.Config {
	return kafkaclient.Config{
		Brokers: c.kafka.Addrs, TopicPrefix: "demo", ConnTimeout: 5 * time.Second, BatchLinger: time.Millisecond,
		SendBufferBytes: 1 << 20, MaxRequestBytes: 1 << 20, StartAtEarliest: true, FetchMaxBytes: 1 << 20,
		FetchMaxWait: 50 * time.Millisecond, Partitions: 1, ReplicationFactor: 1,
	}
}

// answers reads n answers from topic (partition 0), waiting up to 30 s for
// the topic and the messages.
func (c *cluster) answers(t *testing.T, topic string, n int) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := c.kafkaConfig()
	for {
		topics, err := cfg.ListTopics(ctx)
		if err == nil && containsTopic(topics, topic) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("topic %s never created", topic)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r, err := cfg.NewPartitionReader(topic, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []map[string]any
	for len(out) < n {
		msg, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read %s after %d of %d answers: %v", topic, len(out), n, err)
		}
		var a map[string]any
		if err := json.Unmarshal(msg.Value, &a); err != nil {
			t.Fatalf("answer is not JSON: %s", msg.Value)
		}
		out = append(out, a)
	}
	return out
}

func containsTopic(topics []kafkaclient.TopicInfo, name string) bool {
	for _, ti := range topics {
		if ti.Name == name {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	harness.WaitFor(t, what, 30*time.Second, cond)
}

func (c *cluster) gone(key string) func() bool {
	return func() bool { return c.rdb.Exists(context.Background(), key).Val() == 0 }
}

// request sets a request key and waits until the monitor is done with it
// (the key is gone); what names that wait in a failure.
func (c *cluster) request(t *testing.T, key, value, what string) {
	t.Helper()
	c.rdb.Set(context.Background(), key, value, 0)
	waitFor(t, what, c.gone(key))
}

func TestAnswersGoToTheFirehoseAndTheAppIDTopic(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	c.rdb.ZAdd(ctx, "link:a.com:queue", redis.Z{Score: -1, Member: `{"url":"http://a.com","appid":"testapp","crawlid":"c1","priority":1}`})
	c.start(t, map[string]string{"KAFKA_APPID_TOPICS": "true"})
	c.rdb.Set(ctx, "info:link:testapp:c1", "uuid-info", 0)
	c.rdb.Set(ctx, "stop:link:testapp:c1", "uuid-stop", 0)

	for _, topic := range []string{"demo.outbound_firehose", "demo.outbound_testapp"} {
		got := c.answers(t, topic, 2)
		byUUID := map[string]map[string]any{}
		for _, a := range got {
			byUUID[a["uuid"].(string)] = a
		}
		if info := byUUID["uuid-info"]; info == nil || info["total_pending"] != 1.0 || info["crawlid"] != "c1" {
			t.Errorf("%s: info answer %v", topic, info)
		}
		if stop := byUUID["uuid-stop"]; stop == nil || stop["action"] != "stop" {
			t.Errorf("%s: stop answer %v", topic, stop)
		}
	}
	waitFor(t, "request keys removed", func() bool { return c.gone("info:link:testapp:c1")() && c.gone("stop:link:testapp:c1")() })
	if n := c.rdb.PFCount(ctx, "stats:redis-monitor:total:lifetime").Val(); !harness.DistinctCountMatches(n, 2) {
		t.Errorf("total lifetime %d, want 2", n)
	}
	if n := c.rdb.ZCard(ctx, "stats:redis-monitor:InfoMonitor:900").Val(); n != 1 {
		t.Errorf("InfoMonitor 900 window %d, want 1", n)
	}
	waitFor(t, "heartbeat", func() bool {
		keys, _ := c.rdb.Keys(ctx, "stats:redis-monitor:self:*:*").Result()
		return len(keys) == 1
	})
}

func TestThreeMonitorsAnswerEveryRequestExactlyOnce(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	monitors := []*running{c.start(t, nil), c.start(t, nil), c.start(t, nil)}
	const n = 300
	pipe := c.rdb.Pipeline()
	for i := range n {
		pipe.Set(ctx, fmt.Sprintf("info:link:app%d", i), fmt.Sprintf("uuid-%d", i), 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	got := c.answers(t, "demo.outbound_firehose", n)
	seen := map[string]bool{}
	for _, a := range got {
		u := a["uuid"].(string)
		if seen[u] {
			t.Fatalf("%s answered twice", u)
		}
		seen[u] = true
	}
	waitFor(t, "all request keys removed", func() bool {
		keys, _ := c.rdb.Keys(ctx, "info:*").Result()
		return len(keys) == 0
	})
	handled, shares := shutdownAll(t, monitors, (*monitor.Monitor).Handled)
	if handled != n {
		t.Fatalf("monitors handled %d requests (%s), want exactly %d", handled, shares, n)
	}
	t.Logf("shares of the %d requests:%s", n, shares)
	if keys, _ := c.rdb.Keys(ctx, "lock:*").Result(); len(keys) != 0 {
		t.Fatalf("locks left behind: %v", keys)
	}
}

func TestFailingRequestIsRetriedThenDropped(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	r := c.start(t, map[string]string{
		"PLUGINS":            `{"test.Failing": 100, "test.Panicking": 200}`,
		"RETRY_FAILURES_MAX": "2",
	})
	failingPlugin.attempts.Store(0)
	panicPlugin.attempts.Store(0)
	c.rdb.Set(ctx, "fail:1", "x", 0)
	c.rdb.Set(ctx, "panic:1", "y", 0)
	waitFor(t, "failing requests dropped", func() bool { return c.gone("fail:1")() && c.gone("panic:1")() })
	if a, b := failingPlugin.attempts.Load(), panicPlugin.attempts.Load(); a != 3 || b != 3 {
		t.Fatalf("attempts %d and %d, want 3 each (1 + RETRY_FAILURES_MAX)", a, b)
	}
	if r.m.Dropped() != 2 || r.m.Failed() != 6 {
		t.Fatalf("dropped %d failed %d", r.m.Dropped(), r.m.Failed())
	}
	if n := c.rdb.PFCount(ctx, "stats:redis-monitor:fail:lifetime").Val(); !harness.DistinctCountMatches(n, 6) {
		t.Fatalf("fail lifetime %d, want 6", n)
	}
	for _, k := range []string{"lock:fail:1:failures", "lock:panic:1:failures", "lock:fail:1"} {
		if !c.gone(k)() {
			t.Errorf("%s left behind", k)
		}
	}
	if !r.log.Contains("Could not process action within failure limit") || !r.log.Contains("boom on panic:1") {
		t.Fatalf("log lacks the drop or the panic:\n%s", r.log.String())
	}
}

// TestAnUnavailableServiceIsNotAFailure: a request whose plugin cannot
// reach its service stays, however many cycles that lasts, without using
// up its retries, and is answered once the service is back.
func TestAnUnavailableServiceIsNotAFailure(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	outagePlugin.up.Store(false)
	outagePlugin.attempts.Store(0)
	r := c.start(t, map[string]string{"PLUGINS": `{"test.Outage": 100}`, "RETRY_FAILURES_MAX": "1"})
	c.rdb.Set(ctx, "outage:1", "u-outage", 0)
	// More attempts than RETRY_FAILURES_MAX allows failures.
	waitFor(t, "several attempts", func() bool { return outagePlugin.attempts.Load() >= 5 })
	if c.gone("outage:1")() || !c.gone("lock:outage:1:failures")() {
		t.Fatal("the request was dropped, or its failures counted, while its service was down")
	}
	if r.m.Failed() != 0 || r.m.Dropped() != 0 {
		t.Fatalf("failed %d dropped %d while the service was down, want 0", r.m.Failed(), r.m.Dropped())
	}
	outagePlugin.up.Store(true)
	if got := c.answers(t, "demo.outbound_firehose", 1); got[0]["uuid"] != "u-outage" {
		t.Errorf("answer %v, want the request's", got[0])
	}
	waitFor(t, "the request key removed", c.gone("outage:1"))
	if !r.log.Contains("it is left for a later cycle") {
		t.Errorf("log does not say the request was left:\n%s", r.log)
	}
}

func TestWithoutRetriesAFailureDropsTheRequestAtOnce(t *testing.T) {
	c := newCluster(t)
	c.start(t, map[string]string{"PLUGINS": `{"test.Failing": 100}`, "RETRY_FAILURES": "false"})
	failingPlugin.attempts.Store(0)
	c.request(t, "fail:2", "x", "failing request dropped")
	if a := failingPlugin.attempts.Load(); a != 1 {
		t.Fatalf("%d attempts, want 1", a)
	}
}

func TestMalformedTimeoutValueIsDroppedAfterItsRetries(t *testing.T) {
	c := newCluster(t)
	r := c.start(t, nil)
	c.request(t, "timeout:link:testapp:c1", "not-a-time", "malformed timeout dropped")
	if r.m.Failed() != 4 || r.m.Dropped() != 1 {
		t.Fatalf("failed %d dropped %d; want 4 and 1", r.m.Failed(), r.m.Dropped())
	}
}

func TestALockedRequestWaitsForItsLockToExpire(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	// Another monitor holds the lock and died: it expires after 1.5 s.
	c.rdb.Set(ctx, "lock:info:link:testapp", "someone-else", 1500*time.Millisecond)
	c.rdb.Set(ctx, "info:link:testapp", "uuid-locked", 0)
	start := time.Now()
	c.start(t, nil)
	got := c.answers(t, "demo.outbound_firehose", 1)
	if got[0]["uuid"] != "uuid-locked" {
		t.Fatalf("answer %v", got[0])
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("handled after %v, while another monitor held the lock", waited)
	}
}

func TestShutdownFinishesTheRequestInHand(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	r := c.start(t, map[string]string{"PLUGINS": `{"test.Slow": 100}`})
	c.rdb.Set(ctx, "slow:1", "uuid-slow", 0)
	select {
	case <-slowPlugin.started:
	case <-time.After(30 * time.Second):
		t.Fatal("slow request never started")
	}
	// SIGTERM while the request is in hand; it finishes a little later.
	time.AfterFunc(200*time.Millisecond, func() { slowPlugin.release <- struct{}{} })
	r.shutdown(t)
	if got := c.answers(t, "demo.outbound_firehose", 1); got[0]["uuid"] != "uuid-slow" {
		t.Fatalf("answer %v", got[0])
	}
	if !c.gone("slow:1")() {
		t.Fatal("finished request left in Redis")
	}
}

func TestSurvivesARedisRestart(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	r := c.start(t, nil)
	c.request(t, "info:link:app:before", "uuid-before", "first request handled")
	if err := redisServer.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "redis back", func() bool { return c.rdb.Ping(ctx).Err() == nil })
	c.request(t, "info:link:app:after", "uuid-after", "request after the restart handled")
	got := c.answers(t, "demo.outbound_firehose", 2)
	if got[1]["uuid"] != "uuid-after" {
		t.Fatalf("answers %v", got)
	}
	_ = r
}

// startWithoutKafka starts a monitor, then closes its Kafka broker;
// restoreKafka starts a broker on the same port again.
func startWithoutKafka(t *testing.T) (c *cluster, r *running, restoreKafka func()) {
	t.Helper()
	port := harness.Port(t)
	opts := harness.KafkaOptions{NoAutoCreate: true, Ports: []int{port}}
	c = newCluster(t, opts)
	r = c.start(t, nil)
	c.kafka.Close()
	return c, r, func() { c.kafka = harness.StartKafka(t, opts) }
}

func TestAnswerWaitsForKafkaToComeBack(t *testing.T) {
	c, r, restoreKafka := startWithoutKafka(t)
	ctx := context.Background()
	c.rdb.Set(ctx, "info:link:app:c", "uuid-outage", 0)
	waitFor(t, "the monitor trying to publish", func() bool { return r.log.Contains("Failed to send to Kafka; retrying") })
	if c.gone("info:link:app:c")() {
		t.Fatal("request removed before its answer was sent")
	}
	restoreKafka()
	waitFor(t, "request handled after Kafka came back", c.gone("info:link:app:c"))
	if got := c.answers(t, "demo.outbound_firehose", 1); got[0]["uuid"] != "uuid-outage" {
		t.Fatalf("answer %v", got[0])
	}
	if r.m.Failed() != 0 {
		t.Fatalf("%d failures counted for an outage", r.m.Failed())
	}
}

func kafkaTopic(name string) kafkaclient.TopicSpec {
	return kafkaclient.TopicSpec{Name: name, Partitions: 1}
}
