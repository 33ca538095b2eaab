package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/engine"
	_ "github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/all"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

var redisServer harness.SharedRedis

func TestMain(m *testing.M) { redisServer.Main(m) }

// env is one crawler engine running against real Redis, the kfake broker
// and a loopback test site.
type env struct {
	kafka *harness.Kafka
	rdb   *redis.Client
	site  *testsite.Site
	eng   *engine.Engine
	log   *harness.OutputBuffer
	stop  context.CancelFunc
	done  chan struct{}
	once  sync.Once

	reader *kafka.Reader
	read   []map[string]any
}

// testSettings are the crawler's defaults made quick and local.
func testSettings(t testing.TB, kafkaHosts string, overrides map[string]string) *settings.Settings {
	t.Helper()
	env := harness.ClusterSettings(redisServer.Port, kafkaHosts, "")
	maps.Copy(env, map[string]string{"DOWNLOAD_TIMEOUT": "2", "SHUTDOWN_GRACE": "2"})
	maps.Copy(env, overrides)
	s, err := settings.Load(engine.Settings(), settings.Options{Environ: harness.Environ(env)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newEnv(t testing.TB, overrides map[string]string, siteOpts ...testsite.Option) *env {
	t.Helper()
	return newEnvWith(t, overrides, nil, siteOpts...)
}

// newEnvWith is newEnv with prepare run on the services before the engine
// starts.
func newEnvWith(t testing.TB, overrides map[string]string, prepare func(*env, testing.TB), siteOpts ...testsite.Option) *env {
	t.Helper()
	e := &env{
		rdb:   redisServer.EmptyClient(t),
		kafka: harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true}),
		site:  testsite.Start(t, siteOpts...),
	}
	if prepare != nil {
		prepare(e, t)
	}
	e.start(t, overrides)
	return e
}

// start runs a crawler engine (again, after stopEngine).
func (e *env) start(t testing.TB, overrides map[string]string) {
	t.Helper()
	s := testSettings(t, e.kafka.Hosts(), overrides)
	e.log = &harness.OutputBuffer{}
	logged := e.log
	t.Cleanup(func() {
		if t.Failed() { // the crawler's side of the story, for the failure
			out := logged.String()
			t.Logf("crawler log (last 16 KB of %d bytes):\n%s", len(out), out[max(0, len(out)-16<<10):])
		}
	})
	log := harness.Logger(t, logfactory.Settings("SC_").Config(s), e.log)
	ctx, cancel := context.WithCancel(context.Background())
	eng, err := engine.New(ctx, s, log, redisServer.TestClient(t))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	e.eng, e.stop, e.done, e.once = eng, cancel, make(chan struct{}), sync.Once{}
	done := e.done
	go func() {
		defer close(done)
		if err := eng.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
		eng.Close()
	}()
	t.Cleanup(func() { e.stopEngine(t) })
	t.Cleanup(func() { // before the engine stops: where its goroutines wait, for a failure that waited
		if t.Failed() {
			var stacks bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			t.Logf("goroutines (first 32 KB of %d bytes):\n%s", stacks.Len(), stacks.Bytes()[:min(stacks.Len(), 32<<10)])
		}
	})
}

// stopEngine stops the engine as SIGTERM does and waits for it.
func (e *env) stopEngine(t testing.TB) {
	e.once.Do(func() {
		e.stop()
		select {
		case <-e.done:
		case <-time.After(30 * time.Second):
			t.Error("engine did not stop")
		}
	})
}

// seed queues a crawl request as the Kafka Monitor does: the request in its
// domain queue, and the queue announced.
func (e *env) seed(t testing.TB, r *crawlrequest.Request) {
	t.Helper()
	if r.SpiderID == "" {
		r.SpiderID = "link"
	}
	key, member := harness.QueueEntry(t, r)
	ctx := context.Background()
	if err := e.rdb.ZAdd(ctx, key, redis.Z{Score: r.Score(), Member: member}).Err(); err != nil {
		t.Fatal(err)
	}
	e.rdb.Publish(ctx, rediskeys.QueueChannel(r.SpiderID), key)
}

// crawlsExactly seeds seed and checks that its crawl yields the pages want
// (sorted URLs), then drains, with no page more.
func (e *env) crawlsExactly(t testing.TB, seed *crawlrequest.Request, want []string) {
	t.Helper()
	e.seed(t, seed)
	got := urls(e.pages(t, len(want), 60*time.Second))
	e.drained(t, "link")
	e.noMorePages(t)
	if !slices.Equal(got, want) {
		t.Fatalf("crawled %d pages:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
	}
}

// seedCounted queues a crawl request as the Kafka Monitor does, counted as
// a seed in its crawl's ledger.
func (e *env) seedCounted(t testing.TB, r *crawlrequest.Request) {
	t.Helper()
	key, member := harness.QueueEntry(t, r)
	ctx := context.Background()
	if err := ledger.LoadScripts(ctx, e.rdb); err != nil {
		t.Fatal(err)
	}
	pipe := e.rdb.TxPipeline()
	ledger.QueueSeed(ctx, pipe, key, r.Score(), string(member), ledger.Crawl{SpiderID: r.SpiderID, AppID: r.AppID, CrawlID: r.CrawlID},
		time.Now(), time.Hour)
	pipe.Publish(ctx, rediskeys.QueueChannel(r.SpiderID), key)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

func crawl(url, crawlid string, maxdepth int) *crawlrequest.Request {
	return &crawlrequest.Request{URL: url, AppID: "testapp", CrawlID: crawlid, SpiderID: "link", Priority: 1, MaxDepth: maxdepth}
}

func (e *env) kafkaConfig() kafkaclient.Config {
	return kafkaclient.Config{
		Brokers: e.kafka.Addrs, TopicPrefix: "demo", ConnTimeout: 5 * time.Second, BatchLinger: time.Millisecond,
		SendBufferBytes: 1 << 20, MaxRequestBytes: 1 << 20, StartAtEarliest: true, FetchMaxBytes: 10 << 20,
		FetchMaxWait: 50 * time.Millisecond, Partitions: 1, ReplicationFactor: 1,
	}
}

// pages reads results from the crawled firehose until there are n in all
// (those read before included), within timeout.
func (e *env) pages(t testing.TB, n int, timeout time.Duration) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if e.reader == nil {
		cfg := e.kafkaConfig()
		for {
			if err := cfg.EnsureTopics(ctx, kafkaclient.TopicSpec{Name: "demo.crawled_firehose", Partitions: 1}); err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatal("no crawled topic")
			}
			time.Sleep(20 * time.Millisecond)
		}
		r, err := cfg.NewPartitionReader("demo.crawled_firehose", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		e.reader = r
		t.Cleanup(func() { r.Close() })
	}
	for len(e.read) < n {
		msg, err := e.reader.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("after %d of %d pages: %v (urls so far %v)", len(e.read), n, err, urls(e.read))
		}
		var page map[string]any
		if err := json.Unmarshal(msg.Value, &page); err != nil {
			t.Fatalf("result is not JSON: %.300s", msg.Value)
		}
		e.read = append(e.read, page)
	}
	return e.read
}

// drained waits until nothing is queued or in flight for the spider.
func (e *env) drained(t testing.TB, spiderID string) {
	t.Helper()
	ctx := context.Background()
	harness.WaitFor(t, "the crawl to drain", 30*time.Second, func() bool {
		// Read both at one instant: a retry moves a request from its lease
		// back to its queue in one step.
		pipe := e.rdb.TxPipeline()
		keys := pipe.Keys(ctx, spiderID+":*:queue")
		leases := pipe.HLen(ctx, rediskeys.LeaseKey(spiderID)+":items")
		if _, err := pipe.Exec(ctx); err != nil {
			return false
		}
		return len(keys.Val()) == 0 && leases.Val() == 0
	})
}

// noMorePages checks nothing beyond what was read reaches the topic.
func (e *env) noMorePages(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if msg, err := e.reader.ReadMessage(ctx); err == nil {
		t.Fatalf("unexpected extra result: %.300s", msg.Value)
	}
}

// logLine returns the first JSON log line whose message contains msg,
// waiting up to 30 s for it.
func (e *env) logLine(t testing.TB, msg string) map[string]any {
	t.Helper()
	var found map[string]any
	harness.WaitFor(t, "the log line "+msg, 30*time.Second, func() bool {
		for _, line := range strings.Split(e.log.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && strings.Contains(fmt.Sprint(m["message"]), msg) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// ledgerUntil waits (30 s) until c's ledger reads as until wants, what
// the ledger's counts are waited for, and returns it.
func (e *env) ledgerUntil(t testing.TB, c ledger.Crawl, what string, until func(*ledger.Progress) bool) *ledger.Progress {
	t.Helper()
	var p *ledger.Progress
	harness.WaitFor(t, what, 30*time.Second, func() bool {
		got, err := ledger.Read(context.Background(), e.rdb, c)
		if err != nil || got[0] == nil {
			return false
		}
		p = got[0]
		return until(p)
	})
	return p
}

func urls(pages []map[string]any) []string {
	out := make([]string, 0, len(pages))
	for _, p := range pages {
		out = append(out, p["url"].(string))
	}
	slices.Sort(out)
	return out
}

// notFile is the default deny_extensions as far as the test site goes: its
// /files/ and /static/ links all have extensions Scrapy ignores.
func notFile(link string) bool {
	return !strings.Contains(link, "/files/") && !strings.Contains(link, "/static/")
}

func hostname(t testing.TB) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}
