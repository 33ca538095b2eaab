package monitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/monitor"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// cluster is a monitor's surroundings: real Redis, a kfake broker, settings
// pointing at them and a log captured in memory.
type cluster struct {
	redis *harness.Redis
	kafka *harness.Kafka
	rdb   *redis.Client
	s     *settings.Settings
	log   *logfactory.Logger
	logs  *harness.OutputBuffer
}

func newCluster(t testing.TB, redisOpts harness.RedisOptions, extra ...string) *cluster {
	t.Helper()
	r := harness.StartRedis(t, redisOpts)
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	flags := map[string]string{
		"REDIS_HOST": "127.0.0.1", "REDIS_PORT": strconv.Itoa(r.Port), "REDIS_SOCKET_TIMEOUT": "2",
		"KAFKA_HOSTS": k.Hosts(), "KAFKA_INCOMING_PARTITIONS": "2", "STATS_DUMP": "0",
		"KAFKA_CONSUMER_AUTO_COMMIT_ENABLE": "false", "LOG_JSON": "true",
	}
	for _, kv := range extra {
		name, value, _ := strings.Cut(kv, "=")
		flags[name] = value
	}
	s, err := settings.Load(monitor.Settings(), settings.Options{NoEnv: true, Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	logs := &harness.OutputBuffer{}
	log := harness.Logger(t, logfactory.Settings("").Config(s), logs)
	return &cluster{redis: r, kafka: k, rdb: r.TestClient(t), s: s, log: log, logs: logs}
}

// start runs a monitor until the test ends; stop cancels it and waits.
func (c *cluster) start(t testing.TB) (m *monitor.Monitor, stop func()) {
	t.Helper()
	return c.startOn(t, c.rdb)
}

// startOn is start with the monitor writing through rdb.
func (c *cluster) startOn(t testing.TB, rdb redis.UniversalClient) (m *monitor.Monitor, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m, err := monitor.New(ctx, c.s, c.log, rdb)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			defer m.Close()
			cancel()
			harness.WaitDone(t, "Run after cancel", 30*time.Second, done)
		})
	}
	t.Cleanup(stop)
	return m, stop
}

func (c *cluster) produce(t testing.TB, values ...string) {
	t.Helper()
	kcfg, err := kafkaclient.ConfigFromSettings(c.s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kcfg.EnsureTopics(ctx, kafkaclient.TopicSpec{Name: "demo.incoming", Partitions: plugin.IncomingPartitions.From(c.s)}); err != nil {
		t.Fatal(err)
	}
	w := kcfg.NewWriter("demo.incoming")
	defer w.Close()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Value: []byte(v)}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	harness.WaitFor(t, what, 30*time.Second, cond)
}

func TestRequestsLandOnTheirKeysAndBadInputIsCountedAndSkipped(t *testing.T) {
	c := newCluster(t, harness.RedisOptions{})
	m, _ := c.start(t)
	ctx := context.Background()
	c.produce(t,
		`{"url": "http://www.istresearch.com/about", "appid":"testapp", "crawlid":"ABC123"}`,
		`not json at all`,
		`{"uuid":"u1", "appid":"testapp", "spiderid":"link", "action":"info"}`,
		`{"uuid":"u2", "appid":"testapp", "spiderid":"link", "action":"stop", "crawlid":"ABC123"}`,
		`[1, 2, 3]`,
		`{"uuid":"u3", "appid":"testapp"}`,
		`{"uuid":"u4", "appid":"testapp", "action":"domain-update", "domain":"dmoz.org", "hits":60, "window":60, "scale":0.9}`,
		`{"uuid":"u5", "appid":"testapp", "action":"domain-update", "domain":"dmoz.org"}`,
		`{"url": "http://dmoz.org/", "appid":"testapp", "crawlid":"xyz", "priority": 101}`,
		`{"url": "ftp://dmoz.org/", "appid":"testapp", "crawlid":"xyz"}`,
		`{"url": "http://dmoz.org/", "appid":"testapp", "crawlid":"last", "priority": 90, "expires": 1423591888, "maxdepth": 2}`,
	)
	waitFor(t, "11 messages handled", func() bool { return m.Processed() == 11 })

	// The crawl request, with every default filled in, scored -priority
	// (and the tiebreak within its priority below 1).
	zs := c.rdb.ZRangeWithScores(ctx, "link:istresearch.com:queue", 0, -1).Val()
	if len(zs) != 1 || math.Floor(zs[0].Score) != -1 {
		t.Fatalf("istresearch queue = %v", zs)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(zs[0].Member.(string)), &got); err != nil {
		t.Fatal(err)
	}
	// As the original, the request carries the time it was received.
	if ts, ok := got["ts"].(float64); !ok || time.Since(time.Unix(int64(ts), 0)) > time.Minute {
		t.Errorf("queued request ts = %v, want the receive time", got["ts"])
	}
	delete(got, "ts")
	want := map[string]any{"url": "http://www.istresearch.com/about", "appid": "testapp", "crawlid": "ABC123",
		"spiderid": "link", "priority": 1.0, "maxdepth": 0.0, "domain_max_pages": nil, "allowed_domains": nil,
		"allow_regex": nil, "deny_regex": nil, "deny_extensions": nil, "expires": 0.0, "useragent": nil,
		"cookie": nil, "attrs": nil}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("queued request\n got %v\nwant %v", got, want)
	}
	dmoz := c.rdb.ZRangeWithScores(ctx, "link:dmoz.org:queue", 0, -1).Val()
	if len(dmoz) != 1 || math.Floor(dmoz[0].Score) != -90 || !strings.Contains(dmoz[0].Member.(string), `"crawlid":"last"`) {
		t.Errorf("dmoz queue = %v (the priority-101 and ftp requests must not be there)", dmoz)
	}
	for key, want := range map[string]string{
		"timeout:link:testapp:last":         "1423591888",
		"info:link:testapp":                 "u1",
		"stop:link:testapp:ABC123":          "u2",
		"statsrequest:all:testapp":          "u3",
		"zk:domain-update:dmoz.org:testapp": `{"domain":"dmoz.org","hits":60,"scale":0.9,"uuid":"u4","window":60}`,
	} {
		if v := c.rdb.Get(ctx, key).Val(); v != want {
			t.Errorf("%s = %q, want %q", key, v, want)
		}
	}
	if c.rdb.Exists(ctx, "timeout:link:testapp:ABC123").Val() != 0 {
		t.Error("timeout key written for a crawl without expires")
	}

	// Stats: 11 received, 5 failed (not JSON, array, no hits/window, priority 101, ftp).
	counts := map[string]int64{
		"stats:kafka-monitor:total:900": 11, "stats:kafka-monitor:fail:900": 5,
		"stats:kafka-monitor:ScraperHandler:900": 2, "stats:kafka-monitor:ActionHandler:900": 2,
		"stats:kafka-monitor:StatsHandler:900": 1, "stats:kafka-monitor:ZookeeperHandler:900": 1,
	}
	// Stats are written off the request path: wait for all of them.
	statsMatch := func() bool {
		for key, want := range counts {
			if c.rdb.ZCard(ctx, key).Val() != want {
				return false
			}
		}
		return harness.DistinctCountMatches(c.rdb.PFCount(ctx, "stats:kafka-monitor:total:lifetime").Val(), 11)
	}
	if harness.Until(30*time.Second, statsMatch); !statsMatch() {
		for key, want := range counts {
			t.Errorf("ZCARD %s = %d, want %d", key, c.rdb.ZCard(ctx, key).Val(), want)
		}
	}
	snap := m.StatsSnapshot(ctx)
	if snap["total_900"] != int64(11) || !lifetimeIs(snap["fail_lifetime"], 5) || snap["plugin_ScraperHandler_604800"] != int64(2) {
		t.Errorf("stats snapshot = %v", snap)
	}

	// Each failure is logged once with its reason in the message.
	logs := c.logs.String()
	for _, want := range []string{
		`"message": "Request rejected: invalid JSON: invalid character 'o' in literal null (expecting 'u')"`,
		`"message": "Request rejected: no plugin's schema accepts it: ScraperHandler: at '': got array, want object`,
		`"message": "Request rejected: hits: missing or 0; a domain-update needs non-zero hits and window"`,
		`"message": "Request rejected: no plugin's schema accepts it: ScraperHandler: at '/priority': maximum: got 101, want 100"`,
		`"message": "Request rejected: url: scheme \"ftp\" not allowed; want http or https"`,
	} {
		if strings.Count(logs, want) != 1 {
			t.Errorf("log lacks %s, or has it more than once", want)
		}
	}
	if n := strings.Count(logs, `"message": "Added crawl to Redis"`); n != 2 {
		t.Errorf("%d lines say a crawl was added, want 2", n)
	}
	// The self-heartbeat, expiring.
	keys := c.rdb.Keys(ctx, "stats:kafka-monitor:self:*").Val()
	if len(keys) != 1 || c.rdb.TTL(ctx, keys[0]).Val() <= 0 {
		t.Errorf("heartbeat keys %v", keys)
	}
}

func TestEmptyMessagesAreCountedAndLoggedAsFailures(t *testing.T) {
	c := newCluster(t, harness.RedisOptions{}, "LOG_JSON=false")
	m, _ := c.start(t)
	c.produce(t, ``, " \n\t ", `{"url": "http://empty.com/", "appid": "testapp", "crawlid": "c1"}`)
	kcfg, err := kafkaclient.ConfigFromSettings(c.s)
	if err != nil {
		t.Fatal(err)
	}
	w := kcfg.NewWriter("demo.incoming")
	if err := w.WriteMessages(context.Background(), kafka.Message{Key: []byte("tombstone"), Value: nil}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	waitFor(t, "4 messages handled", func() bool { return m.Processed() == 4 })
	ctx := context.Background()
	waitFor(t, "3 failures counted", func() bool { return c.rdb.ZCard(ctx, "stats:kafka-monitor:fail:900").Val() == 3 })
	// The text log line carries the reason.
	if n := strings.Count(c.logs.String(), "[kafka-monitor] WARNING: Request rejected: empty request"); n != 3 {
		t.Fatalf("%d log lines for 3 empty messages:\n%s", n, c.logs.String())
	}
	if c.rdb.ZCard(ctx, "link:empty.com:queue").Val() != 1 {
		t.Fatal("the request after the empty ones was not queued")
	}
}

func TestNewDomainQueueIsAnnouncedOnce(t *testing.T) {
	c := newCluster(t, harness.RedisOptions{})
	sub := harness.Subscribe(t, c.rdb, "link:queue-announce")
	m, _ := c.start(t)
	c.produce(t,
		`{"url": "http://a.example.com/", "appid":"testapp", "crawlid":"c1"}`,
		`{"url": "http://b.example.com/", "appid":"testapp", "crawlid":"c1"}`,
		`{"url": "http://other.org/", "appid":"testapp", "crawlid":"c1"}`)
	waitFor(t, "3 messages", func() bool { return m.Processed() == 3 })
	got := harness.Messages(t, sub, 2, 20*time.Second)
	select {
	case msg := <-sub.Channel():
		t.Fatalf("extra announcement %q (handled %d messages)", msg.Payload, m.Processed())
	case <-time.After(200 * time.Millisecond):
	}
	if strings.Join(got, ",") != "link:example.com:queue,link:other.org:queue" &&
		strings.Join(got, ",") != "link:other.org:queue,link:example.com:queue" {
		t.Fatalf("announced %v", got)
	}
}

func TestRedisOutageLosesNoRequest(t *testing.T) {
	c := newCluster(t, harness.RedisOptions{AppendOnly: true})
	m, _ := c.start(t)
	const n = 300
	reqs := make([]string, n)
	for i := range reqs {
		reqs[i] = fmt.Sprintf(`{"url": "http://outage.com/page/%d", "appid":"testapp", "crawlid":"c%d"}`, i, i)
	}
	c.produce(t, reqs[:100]...)
	waitFor(t, "the first 100", func() bool { return m.Processed() >= 100 })

	c.redis.Kill()
	c.produce(t, reqs[100:200]...)
	// The monitor keeps retrying the batch in hand and reads nothing more.
	waitFor(t, "a logged Redis failure", func() bool {
		return strings.Contains(c.logs.String(), "Failed to store requests in Redis; retrying")
	})
	if err := c.redis.Restart(); err != nil {
		t.Fatal(err)
	}
	c.produce(t, reqs[200:]...)
	ctx := context.Background()
	waitFor(t, "every request in Redis", func() bool { return c.rdb.ZCard(ctx, "link:outage.com:queue").Val() == n })
	members := c.rdb.ZRange(ctx, "link:outage.com:queue", 0, -1).Val()
	seen := map[string]bool{}
	for _, mem := range members {
		var r map[string]any
		if err := json.Unmarshal([]byte(mem), &r); err != nil {
			t.Fatal(err)
		}
		seen[r["crawlid"].(string)] = true
	}
	for i := range n {
		if !seen[fmt.Sprintf("c%d", i)] {
			t.Fatalf("request c%d lost", i)
		}
	}
	// Each queued in the same step as its count, whatever was retried.
	c.wantOneSeedEach(t, n)
}

// wantOneSeedEach checks that the crawls c0..c<n-1> of testapp each have
// their one seed counted once in their ledgers.
func (c *cluster) wantOneSeedEach(t *testing.T, n int) {
	t.Helper()
	crawls := make([]ledger.Crawl, n)
	for i := range crawls {
		crawls[i] = ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: fmt.Sprintf("c%d", i)}
	}
	ps, err := ledger.Read(context.Background(), c.rdb, crawls...)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if p == nil || p.Seeds != 1 {
			t.Fatalf("c%d's ledger %+v, want its one seed counted once", i, p)
		}
	}
}

// A monitor validates and stores the next batch while the one before is
// still being written: stopped while both wait for Redis, it commits
// neither, and the next monitor stores each request once.
func TestAMonitorStoppedWithTwoBatchesInFlightCommitsNeither(t *testing.T) {
	const batchSize = 50
	// One partition: a batch with a partition the batch before did not
	// have looks its marks up, and lands the batch before first.
	c := newCluster(t, harness.RedisOptions{AppendOnly: true}, "BATCH_SIZE="+strconv.Itoa(batchSize), "KAFKA_INCOMING_PARTITIONS=1")
	const n = 300
	reqs := make([]string, n)
	for i := range reqs {
		reqs[i] = fmt.Sprintf(`{"url": "http://inflight.com/page/%d", "appid":"testapp", "crawlid":"c%d"}`, i, i)
	}
	m0, stop0 := c.start(t)
	c.produce(t, reqs[:100]...)
	waitFor(t, "the first 100", func() bool { return m0.Processed() >= 100 })
	stop0()

	// The next 200 wait in Kafka. Redis answers reads but holds writes.
	// The monitor's first read of its marks waits until it holds more than
	// a batch of messages and the one the fetcher may have in hand, so
	// that it launches a batch, finds the next one waiting and launches it
	// while the first waits for Redis. Then Redis
	// goes down and every write fails.
	c.produce(t, reqs[100:]...)
	ctx := context.Background()
	if err := c.rdb.Do(ctx, "CLIENT", "PAUSE", "120000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	marksRead := make(chan struct{})
	rdb1 := c.redis.TestClient(t)
	rdb1.AddHook(holdMarksReads{until: marksRead})
	m1, stop1 := c.startOn(t, rdb1)
	longest := 0
	for _, r := range reqs {
		longest = max(longest, len(r))
	}
	waitFor(t, "more than a batch read ahead", func() bool { return m1.HeldBytes() > (batchSize+1)*monitor.HeldCost(longest) })
	close(marksRead)
	waitFor(t, "two batches in flight", func() bool { b, _ := m1.Launched(); return b == 2 })
	c.redis.Kill()
	waitFor(t, "a logged Redis failure", func() bool {
		return strings.Contains(c.logs.String(), "Failed to store requests in Redis; retrying")
	})
	stop1()
	if err := c.redis.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := m1.Processed(); got != 0 {
		t.Fatalf("the stopped monitor reported %d requests, want none", got)
	}
	if b, _ := m1.Launched(); b != 2 {
		t.Fatalf("the stopped monitor launched %d batches, want the two it had in flight", b)
	}
	_, inFlight := m1.Launched()
	var notStored float64
	for line := range strings.Lines(c.logs.String()) {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) == nil && l["message"] == "Stopped before the batch was stored; it will be delivered again" {
			notStored, _ = l["messages"].(float64)
		}
	}
	if int64(notStored) != inFlight {
		t.Fatalf("the stopped monitor logged %v messages not stored, want the %d of its two batches in flight:\n%s", notStored, inFlight, c.logs)
	}

	m2, _ := c.start(t)
	waitFor(t, "every request in Redis", func() bool { return c.rdb.ZCard(ctx, "link:inflight.com:queue").Val() == n })
	waitFor(t, "the second monitor's 200", func() bool { return m2.Processed() >= 200 })
	c.wantOneSeedEach(t, n)
}

// holdMarksReads holds a client's pipelines that read sorted sets by score
// (the Kafka Monitor's read of its stored marks) until until is closed.
type holdMarksReads struct{ until <-chan struct{} }

func (holdMarksReads) DialHook(next redis.DialHook) redis.DialHook { return next }
func (holdMarksReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}

func (h holdMarksReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if cmd.Name() == "zrangebyscore" {
				<-h.until
				break
			}
		}
		return next(ctx, cmds)
	}
}

// READ_AHEAD_BYTES bounds what a monitor holds, not what it can store: with
// room for a few requests it stores them all, one larger than the whole
// budget too.
func TestASmallReadAheadBudgetStoresEveryRequest(t *testing.T) {
	c := newCluster(t, harness.RedisOptions{}, "READ_AHEAD_BYTES=4096")
	m, _ := c.start(t)
	const n = 100
	reqs := make([]string, 0, n+1)
	for i := range n {
		reqs = append(reqs, fmt.Sprintf(`{"url": "http://budget.com/page/%d", "appid":"testapp", "crawlid":"c%d"}`, i, i))
	}
	reqs = append(reqs, `{"url": "http://budget.com/large", "appid":"testapp", "crawlid":"large", "attrs": {"note": "`+strings.Repeat("x", 20000)+`"}}`)
	c.produce(t, reqs...)
	waitFor(t, "every request handled", func() bool { return m.Processed() == n+1 })
	if got := c.rdb.ZCard(context.Background(), "link:budget.com:queue").Val(); got != n+1 {
		t.Fatalf("queue holds %d requests, want %d", got, n+1)
	}
}

func TestStoppedMonitorCommitsWhatItStoredAndTheNextOneResumes(t *testing.T) {
	c := newCluster(t, harness.RedisOptions{})
	m1, stop := c.start(t)
	c.produce(t, `{"url": "http://resume.com/1", "appid":"testapp", "crawlid":"a"}`)
	waitFor(t, "the first request", func() bool { return m1.Processed() == 1 })
	stop()

	c.produce(t, `{"url": "http://resume.com/2", "appid":"testapp", "crawlid":"b"}`)
	m2, _ := c.start(t)
	waitFor(t, "the second request", func() bool { return m2.Processed() >= 1 })
	// Give a redelivery of the first request the chance to show up.
	time.Sleep(300 * time.Millisecond)
	if got := m2.Processed(); got != 1 {
		t.Fatalf("second monitor handled %d messages; the committed one was delivered again", got)
	}
	if n := c.rdb.ZCard(context.Background(), "link:resume.com:queue").Val(); n != 2 {
		t.Fatalf("queue holds %d requests, want 2", n)
	}
	// Committed offsets need no marks: none is left.
	if keys := c.rdb.Keys(context.Background(), "kafka-monitor:stored:*").Val(); len(keys) != 0 {
		t.Fatalf("marks left after the commits: %v", keys)
	}
}

func TestFeedValidatesLocallyAndSendsOnlyValidRequests(t *testing.T) {
	c := newCluster(t, harness.RedisOptions{})
	ctx := context.Background()
	err := monitor.Feed(ctx, c.s, c.log, []byte(`{"url": "http://feed.com", "appid":"testapp"}`))
	if !errors.Is(err, monitor.ErrInvalidRequest) || !strings.Contains(err.Error(), "crawlid") {
		t.Fatalf("invalid feed: %v", err)
	}
	if err := monitor.Feed(ctx, c.s, c.log, []byte(`{not json`)); !errors.Is(err, monitor.ErrInvalidRequest) {
		t.Fatalf("non-JSON feed: %v", err)
	}
	if err := monitor.Feed(ctx, c.s, c.log, []byte(`{"url": "http://feed.com", "appid":"testapp", "crawlid":"f1"}`)); err != nil {
		t.Fatal(err)
	}
	// Exactly the valid request is on the topic.
	m, _ := c.start(t)
	waitFor(t, "the fed request", func() bool { return m.Processed() == 1 })
	if n := c.rdb.ZCard(ctx, "link:feed.com:queue").Val(); n != 1 {
		t.Fatalf("queue holds %d; logs:\n%s", n, c.logs.String())
	}
	logs := c.logs.String()
	if !strings.Contains(logs, "Feeding JSON into demo.incoming") || !strings.Contains(logs, "Successfully fed item to Kafka") {
		t.Fatalf("feed logs:\n%s", logs)
	}
}

// newMonitor is a monitor that is not running, for Process.
func (c *cluster) newMonitor(t *testing.T) *monitor.Monitor {
	t.Helper()
	m, err := monitor.New(context.Background(), c.s, c.log, c.rdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// seedBatch is crawl requests for marked.com at the given offsets of one partition.
func seedBatch(partition int, from, to int64) []kafka.Message {
	var batch []kafka.Message
	for o := from; o <= to; o++ {
		batch = append(batch, kafka.Message{Topic: "demo.incoming", Partition: partition, Offset: o,
			Value: []byte(fmt.Sprintf(`{"url": "http://marked.com/%d/%d", "appid": "testapp", "crawlid": "p%d-o%d"}`, partition, o, partition, o))})
	}
	return batch
}

// markLookups counts the look-ups of marks Redis served.
func markLookups(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info := rdb.Info(context.Background(), "commandstats").Val()
	_, rest, ok := strings.Cut(info, "cmdstat_zrangebyscore:calls=")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestARedeliveredBatchIsSkippedNotStoredTwice(t *testing.T) {
	c := newCluster(t, harness.RedisOptions{})
	ctx := context.Background()
	const queue = "link:marked.com:queue"
	batch := append(seedBatch(0, 0, 9), seedBatch(1, 0, 4)...)
	if err := c.newMonitor(t).Process(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if n := c.rdb.ZCard(ctx, queue).Val(); n != 15 {
		t.Fatalf("queue holds %d after the first delivery, want 15", n)
	}

	// The monitor that takes over gets the batch again, and more.
	next := c.newMonitor(t)
	again := append(append(seedBatch(0, 0, 9), seedBatch(1, 0, 4)...), seedBatch(1, 5, 7)...)
	// The same offset with another request (a re-created topic) is new.
	again[0].Value = []byte(`{"url": "http://marked.com/recreated", "appid": "testapp", "crawlid": "recreated"}`)
	if err := next.Process(ctx, again); err != nil {
		t.Fatal(err)
	}
	if n := c.rdb.ZCard(ctx, queue).Val(); n != 15+3+1 {
		t.Fatalf("queue holds %d after the redelivery, want 19: the 3 new requests and the re-created offset", n)
	}
	if n := next.Processed(); n != int64(len(again)) {
		t.Errorf("Processed() = %d, want %d", n, len(again))
	}
	if !strings.Contains(c.logs.String(), `"message": "Skipped requests stored before; they were delivered again after a monitor stopped or a rebalance", "logger": "kafka-monitor", "timestamp"`) ||
		!strings.Contains(c.logs.String(), `"messages": 14`) {
		t.Errorf("no log line for the 14 skipped requests:\n%s", c.logs.String())
	}
}

func TestMarksAreLookedUpOnlyWhereARedeliveryCanBe(t *testing.T) {
	c := newCluster(t, harness.RedisOptions{}, "STATS_TOTAL=false", "STATS_PLUGINS=false") // the stats read sorted sets too
	ctx := context.Background()
	m := c.newMonitor(t)
	if err := m.Process(ctx, seedBatch(0, 0, 9)); err != nil {
		t.Fatal(err)
	}
	// Reading on where it left off, the monitor asks Redis nothing.
	before := markLookups(t, c.rdb)
	if err := m.Process(ctx, seedBatch(0, 10, 19)); err != nil {
		t.Fatal(err)
	}
	if n := markLookups(t, c.rdb) - before; n != 0 {
		t.Errorf("%d look-ups of marks for a batch that follows the last one, want 0", n)
	}
	// A rewind (the partition came back after a rebalance) is looked up once and skipped.
	if err := m.Process(ctx, seedBatch(0, 15, 21)); err != nil {
		t.Fatal(err)
	}
	if n := markLookups(t, c.rdb) - before; n != 1 {
		t.Errorf("%d look-ups of marks for a rewound batch, want 1", n)
	}
	if n := c.rdb.ZCard(ctx, "link:marked.com:queue").Val(); n != 22 {
		t.Errorf("queue holds %d, want the 22 distinct requests", n)
	}
}

// lifetimeIs reports whether v, a lifetime count from a stats snapshot,
// reads want (see harness.DistinctCountMatches).
func lifetimeIs(v any, want int64) bool {
	n, ok := v.(int64)
	return ok && harness.DistinctCountMatches(n, want)
}
