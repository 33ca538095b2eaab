package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

func TestMain(m *testing.M) { bins.Main(m) }

// bins is the crawler binary, built at most once per test binary.
var bins = harness.Binaries{Packages: []string{"./crawler/cmd/crawler"}}

// crawlerBinary builds cmd/crawler with the go on PATH (a normal build, even
// when the tests run with -race) and returns its path; E2E_CRAWLER_BINARY
// names a crawler binary to run instead (to compare builds in benchmarks).
func crawlerBinary(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("E2E_CRAWLER_BINARY"); p != "" {
		return p
	}
	return bins.Path(tb, "crawler")
}

// cluster is the services a test's crawlers share: a redis-server and a
// kfake broker of its own, and a reader of the crawled firehose.
type cluster struct {
	redis *harness.Redis
	rdb   *redis.Client
	kafka *harness.Kafka

	reader *kafka.Reader
	read   []*spider.Page
}

func newCluster(tb testing.TB) *cluster {
	tb.Helper()
	r := harness.StartRedis(tb)
	return &cluster{redis: r, rdb: r.TestClient(tb), kafka: harness.StartKafka(tb, harness.KafkaOptions{NoAutoCreate: true})}
}

// settings are the environment a crawler of the cluster runs with: quick,
// local, no throttle to speak of, JSON logs; overrides win.
func (c *cluster) settings(overrides map[string]string) map[string]string {
	env := harness.ClusterSettings(c.redis.Port, c.kafka.Hosts(), "")
	maps.Copy(env, overrides)
	return env
}

// crawler is one crawler process.
type crawler struct {
	*harness.Process
	name string
	out  *harness.OutputBuffer
}

// startCrawler runs the crawler binary with the cluster's settings and
// overrides (environment variables) and args. When the test ends the
// process gets SIGTERM (and must exit 0), or SIGKILL if it lingers; its
// output is shown when the test failed or the process ended by itself.
func (c *cluster) startCrawler(tb testing.TB, name string, overrides map[string]string, args ...string) *crawler {
	tb.Helper()
	// Only our settings: nothing from the test's environment leaks in.
	proc := harness.StartProcess(tb, harness.ProcessSpec{Name: "crawler " + name, Path: crawlerBinary(tb), Args: args, Env: harness.Environ(c.settings(overrides)),
		StopGrace: 10 * time.Second})
	p := &crawler{Process: proc, name: name, out: proc.Output()}
	tb.Cleanup(func() {
		if p.exited() && !p.wasStopped() {
			tb.Errorf("crawler %s exited by itself: %v", name, p.Wait())
		} else if err := p.stop(10 * time.Second); err != nil {
			tb.Errorf("crawler %s: %v", name, err)
		}
	})
	return p
}

func (p *crawler) exited() bool { return p.Exited() }

// wasStopped reports whether the test ended the process (not it itself).
func (p *crawler) wasStopped() bool { return p.Signalled() }

// kill ends the process at once with SIGKILL and waits for it.
func (p *crawler) kill() { p.Kill() }

// stop ends the process with SIGTERM, as an operator does, and SIGKILL
// after grace; it fails unless the process drained and exited 0.
func (p *crawler) stop(grace time.Duration) error {
	if p.exited() {
		return nil // killed before
	}
	err := p.Stop(grace)
	if err != nil && !errors.Is(err, harness.ErrStillRunning) {
		return fmt.Errorf("exit after SIGTERM: %w", err)
	}
	return err
}

// pid is the process id.
func (p *crawler) pid() int { return p.Pid() }

func tail(s string, n int) string { return harness.Tail(s, n) }

// seed queues crawl requests as the Kafka Monitor does: each request's JSON
// in its domain queue with score -priority, counted as a seed in its
// crawl's ledger, then each queue announced, in one transaction.
func (c *cluster) seed(tb testing.TB, reqs ...*crawlrequest.Request) {
	tb.Helper()
	ctx := context.Background()
	if err := ledger.LoadScripts(ctx, c.rdb); err != nil {
		tb.Fatal(err)
	}
	tx := c.rdb.TxPipeline()
	announce := map[string]string{} // queue key: spider id
	for _, r := range reqs {
		key, member := harness.QueueEntry(tb, r)
		ledger.QueueSeed(ctx, tx, key, r.Score(), string(member), ledger.Crawl{SpiderID: r.SpiderID, AppID: r.AppID, CrawlID: r.CrawlID},
			time.Now(), ledger.DefaultTTL)
		announce[key] = r.SpiderID
	}
	for key, spiderID := range announce {
		tx.Publish(ctx, rediskeys.QueueChannel(spiderID), key)
	}
	if _, err := tx.Exec(ctx); err != nil {
		tb.Fatalf("seed %d requests: %v", len(reqs), err)
	}
}

// crawl is a crawl request as a client would feed it.
func crawl(spiderID, url, crawlID string, maxDepth int) *crawlrequest.Request {
	return &crawlrequest.Request{URL: url, AppID: "e2e", CrawlID: crawlID, SpiderID: spiderID, Priority: 1, MaxDepth: maxDepth}
}

func (c *cluster) kafkaConfig() kafkaclient.Config {
	return kafkaclient.Config{
		Brokers: c.kafka.Addrs, TopicPrefix: "demo", ConnTimeout: 5 * time.Second, BatchLinger: time.Millisecond,
		MaxRequestBytes: 1 << 20, StartAtEarliest: true, FetchMaxBytes: 10 << 20,
		FetchMaxWait: 50 * time.Millisecond, Partitions: 1, ReplicationFactor: 1,
	}
}

// firehose returns a reader of demo.crawled_firehose from its start,
// creating the topic as the crawlers do if none has yet.
func (c *cluster) firehose(tb testing.TB) *kafka.Reader {
	tb.Helper()
	if c.reader != nil {
		return c.reader
	}
	cfg := c.kafkaConfig()
	topic := cfg.Topic("crawled_firehose")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	harness.WaitFor(tb, "the crawled topic", 10*time.Second, func() bool {
		return cfg.EnsureTopics(ctx, kafkaclient.TopicSpec{Name: topic, Partitions: 1}) == nil
	})
	r, err := cfg.NewPartitionReader(topic, 0, kafka.FirstOffset)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	c.reader = r
	return r
}

// resultsUntil reads crawl results (adding to those read before) until
// done says they are enough, within timeout, and returns them all.
func (c *cluster) resultsUntil(tb testing.TB, what string, timeout time.Duration, done func([]*spider.Page) bool) []*spider.Page {
	tb.Helper()
	r := c.firehose(tb)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for !done(c.read) {
		msg, err := r.ReadMessage(ctx)
		if err != nil {
			tb.Fatalf("waiting for %s, after %d results: %v; urls so far:\n%s", what, len(c.read), err, strings.Join(resultURLs(c.read), "\n"))
		}
		var page spider.Page
		if err := json.Unmarshal(msg.Value, &page); err != nil {
			tb.Fatalf("result is not a crawl result: %v: %.300s", err, msg.Value)
		}
		c.read = append(c.read, &page)
	}
	return c.read
}

// resultsFor reads until every url in want has a result of crawlID
// (duplicates allowed) and returns how many results each url got.
func (c *cluster) resultsFor(tb testing.TB, crawlID string, want []string, timeout time.Duration) map[string]int {
	tb.Helper()
	var counts map[string]int
	c.resultsUntil(tb, fmt.Sprintf("%d pages of crawl %s", len(want), crawlID), timeout, func(pages []*spider.Page) bool {
		counts = map[string]int{}
		for _, p := range pages {
			if p.CrawlID == crawlID {
				counts[p.URL]++
			}
		}
		for _, u := range want {
			if counts[u] == 0 {
				return false
			}
		}
		return true
	})
	return counts
}

// noMoreResults checks that nothing beyond what was read reaches the topic
// within a short while.
func (c *cluster) noMoreResults(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if msg, err := c.firehose(tb).ReadMessage(ctx); err == nil {
		tb.Fatalf("unexpected extra result: %.300s", msg.Value)
	} else if !errors.Is(err, context.DeadlineExceeded) {
		tb.Fatal(err)
	}
}

// drained waits until the spiders have nothing queued and nothing leased.
func (c *cluster) drained(tb testing.TB, timeout time.Duration, spiderIDs ...string) {
	tb.Helper()
	ctx := context.Background()
	harness.WaitFor(tb, "the queues and leases to empty", timeout, func() bool {
		// Read queues and leases at one instant: a retry moves a request
		// from its lease back to its queue in one step.
		pipe := c.rdb.TxPipeline()
		var counts []*redis.IntCmd
		var queues []*redis.StringSliceCmd
		for _, id := range spiderIDs {
			queues = append(queues, pipe.Keys(ctx, id+":*:queue"))
			zset := rediskeys.LeaseKey(id)
			counts = append(counts, pipe.ZCard(ctx, zset), pipe.HLen(ctx, zset+":items"))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return false
		}
		for _, q := range queues {
			if len(q.Val()) > 0 {
				return false
			}
		}
		for _, n := range counts {
			if n.Val() > 0 {
				return false
			}
		}
		return true
	})
}

// leases returns how many requests of the spider are leased: the larger of
// the leases' deadlines and records (a lease is both until it ends).
func (c *cluster) leases(tb testing.TB, spiderID string) int64 {
	tb.Helper()
	l, err := throttle.NewLeases(c.rdb, rediskeys.LeaseKey(spiderID), time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	zset, hash := l.Keys()
	ctx := context.Background()
	deadlines, err := c.rdb.ZCard(ctx, zset).Result()
	if err != nil {
		tb.Fatal(err)
	}
	records, err := c.rdb.HLen(ctx, hash).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return max(deadlines, records)
}

func resultURLs(pages []*spider.Page) []string {
	out := make([]string, 0, len(pages))
	for _, p := range pages {
		out = append(out, p.URL)
	}
	slices.Sort(out)
	return out
}

// hitsBy returns the site's hits, in time order, that keep says to.
func hitsBy(site *testsite.Site, keep func(testsite.Hit) bool) []testsite.Hit {
	var out []testsite.Hit
	for _, h := range site.Hits() {
		if keep(h) {
			out = append(out, h)
		}
	}
	return out
}

// notFile is the default deny_extensions as far as the test site goes: its
// /files/ and /static/ links all have extensions Scrapy ignores.
func notFile(link string) bool {
	return !strings.Contains(link, "/files/") && !strings.Contains(link, "/static/")
}
