package rediscluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// A master SIGKILLed mid-crawl, with work queued on it: the Kafka Monitor
// and both crawlers follow its promoted replica with no restart (the
// harness fails the test if one exits), and the crawl completes: nothing
// left queued or leased, the summed ledger with nothing outstanding. With
// asynchronous replication the writes the dead master had not passed on
// are lost; the test logs how many pages the crawl lost that way
// (docs/redis-cluster.md#failover gives the figure over many runs). The
// REST service, started before the kill, answers the crawl's progress
// from the promoted replica, as the summed ledger has it, with no
// restart either.
func TestCrawlThroughAFailover(t *testing.T) {
	f := crawlThroughAFailover(t, 0, "fo0")
	t.Logf("failover with REDIS_WAIT_REPLICAS=0: %d of %d pages lost, %d published twice or more, %d pages before the kill",
		len(f.lost), f.want, f.dupes, f.before)
}

// With REDIS_WAIT_REPLICAS=1 every write that records accepted work is
// on the replica before it is relied on: a failover mid-crawl loses not
// one page.
func TestCrawlThroughAFailoverWaitingForReplicas(t *testing.T) {
	f := crawlThroughAFailover(t, 1, "fo1")
	t.Logf("failover with REDIS_WAIT_REPLICAS=1: %d of %d pages lost, %d published twice or more, %d pages before the kill",
		len(f.lost), f.want, f.dupes, f.before)
	if len(f.lost) > 0 {
		t.Errorf("with REDIS_WAIT_REPLICAS=1 the failover lost %d pages: %v", len(f.lost), f.lost)
	}
}

// failover is what a crawl through a failover published.
type failover struct {
	want   int      // pages the crawl reaches
	lost   []string // of them, never published
	dupes  int      // pages published more than once
	before int      // pages published before the kill
}

// crawlThroughAFailover crawls 20 throttled domains (two pages a second
// each) on a Redis Cluster with the Kafka Monitor, two crawlers and a
// Redis Monitor, REDIS_WAIT_REPLICAS=wait, and kills with SIGKILL the master holding the
// most queued requests once a quarter of the pages are published. It
// waits until the crawl is over (its ledger summed over every master has
// nothing outstanding, nothing is queued or leased, and no page came for
// a few seconds) and says what was published.
func crawlThroughAFailover(t *testing.T, wait int, crawlID string) failover {
	rc, k, seed, want := depthThreeCrawl(t, 3)
	env := clusterEnv(rc, k, map[string]string{"QUEUE_HITS": "2", "QUEUE_WINDOW": "1"})
	if wait > 0 {
		env["REDIS_WAIT_REPLICAS"] = fmt.Sprint(wait)
	}
	startComponents(t, env, "kafka-monitor", "crawler-1", "crawler-2", "redis-monitor")
	restURL := startREST(t, env, crawlID)
	pages := readPages(t, k, crawlID)
	outbound := readAll(t, k, "outbound_firehose")
	feed(t, env, fmt.Sprintf(`{"url": %q, "appid": "e2e", "crawlid": %q, "spiderid": "link", "maxdepth": 3}`, seed, crawlID))

	c := rc.TestClient(t)
	var victim *harness.Redis
	harness.WaitFor(t, "a quarter of the pages published, with work queued", 120*time.Second, func() bool {
		if pages.distinct() < len(want)/4 {
			return false
		}
		victim = busiestMaster(t, rc, c)
		return victim != nil
	})
	before := pages.distinct()
	promoted := rc.KillMaster(t, victim)
	t.Logf("killed master %s after %d of %d pages; replica %s promoted", victim.Addr, before, len(want), promoted.Addr)
	harness.WaitFor(t, "the REST service to answer the crawl after the failover", 60*time.Second, func() bool {
		_, err := restProgress(restURL)
		return err == nil
	})

	crawl := ledger.Crawl{SpiderID: "link", AppID: "e2e", CrawlID: crawlID}
	last, lastN := time.Now(), -1
	harness.WaitFor(t, "the crawl to be over", 180*time.Second, func() bool {
		if n := pages.total(); n != lastN {
			last, lastN = time.Now(), n
		}
		shares, err := ledger.ActiveShares(context.Background(), c)
		if err != nil {
			return false
		}
		// No share at all (p nil): the crawl has left the ledger's active
		// index, which the Redis Monitor does when it completes the crawl
		// (its crawl-complete is checked below).
		p, consistent, err := ledger.ReadSum(context.Background(), c, crawl, shares.Domains(crawl))
		if err != nil || !consistent || p != nil && (p.Queued != 0 || p.InFlight != 0) {
			return false
		}
		return len(leftovers(t, c)) == 0 && time.Since(last) > 3*time.Second
	})
	// The Redis Monitor, which lived through the failover too, says the
	// crawl is complete, once.
	outbound.first(t, "the crawl-complete of "+crawlID, completion(crawlID))
	if all, _ := outbound.where(completion(crawlID)); len(all) != 1 {
		t.Errorf("%s completed %d times, want once", crawlID, len(all))
	}
	sums, err := ledger.ReadClusterCrawls(context.Background(), c, crawl.SpiderID, crawl.AppID, crawl.CrawlID)
	if err != nil {
		t.Fatal(err)
	}
	sum := sums[crawl]
	harness.WaitFor(t, "the REST service to say the crawl is complete", 30*time.Second, func() bool {
		p, err := restProgress(restURL)
		return err == nil && p.State == ledger.StateComplete
	})
	if p, _ := restProgress(restURL); sum == nil || p.Published != sum.Published || p.Done != sum.Done || p.Queued != 0 || p.InFlight != 0 {
		t.Errorf("the REST service says %+v of the crawl; the ledger summed over the masters, %+v", p, sum)
	}
	if n := waits(t, rc); (n > 0) != (wait > 0) {
		t.Errorf("the masters ran WAIT %d times with REDIS_WAIT_REPLICAS=%d", n, wait)
	}
	f := failover{want: len(want), before: before}
	counts := pages.snapshot()
	for u, n := range counts {
		if !slices.Contains(want, u) {
			t.Errorf("published %s, which the crawl does not reach", u)
		}
		if n > 1 {
			f.dupes++
		}
	}
	for _, u := range want {
		if counts[u] == 0 {
			f.lost = append(f.lost, u)
		}
	}
	return f
}

// depthThreeCrawl starts a Redis Cluster, a broker and 20 sites, each
// "/" linking to roots tree roots, and returns the seed of a crawl of
// depth 3 and the pages it reaches.
func depthThreeCrawl(tb testing.TB, roots int) (rc *harness.RedisCluster, k *harness.Kafka, seed string, want []string) {
	rc = harness.StartRedisCluster(tb)
	k = harness.StartKafka(tb, harness.KafkaOptions{NoAutoCreate: true})
	sites := startSites(tb, 20, testsite.WithPages(roots))
	seed = sites[0].URL("/")
	return rc, k, seed, testsite.Reachable(seed, 3, notFile, sites...)
}

// busiestMaster is the master whose domain queues hold the most requests
// of the link spider, nil when none holds any.
func busiestMaster(t *testing.T, rc *harness.RedisCluster, c *redis.ClusterClient) *harness.Redis {
	t.Helper()
	queued := map[string]int64{}
	var mu sync.Mutex
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, rediskeys.Cluster.Queue("link", "*")).Result()
		if err != nil {
			return err
		}
		var n int64
		for _, key := range keys {
			size, err := m.ZCard(ctx, key).Result()
			if err != nil {
				return err
			}
			n += size
		}
		mu.Lock()
		queued[m.Options().Addr] = n
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil
	}
	var best *harness.Redis
	var most int64
	for _, m := range rc.Masters(t) {
		if queued[m.Addr] > most {
			best, most = m, queued[m.Addr]
		}
	}
	return best
}

// waits is how many WAIT commands the masters of rc have run.
func waits(t *testing.T, rc *harness.RedisCluster) int {
	t.Helper()
	n := 0
	for _, m := range rc.Masters(t) {
		rdb := m.Client()
		stats, err := rdb.Info(context.Background(), "commandstats").Result()
		rdb.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(stats, "\r\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_wait:calls="); ok {
				calls, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				n += calls
			}
		}
	}
	return n
}

// pageLog counts the crawl results of one crawl read from the crawled
// firehose, in the background until the test ends.
type pageLog struct {
	mu     sync.Mutex
	counts map[string]int
	n      int
}

func (p *pageLog) distinct() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.counts)
}

func (p *pageLog) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *pageLog) snapshot() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	for u, n := range p.counts {
		out[u] = n
	}
	return out
}

// readPages reads the crawled firehose from its start in the background
// and counts the results of crawlID by url.
func readPages(t testing.TB, k *harness.Kafka, crawlID string) *pageLog {
	t.Helper()
	cfg := kafkaclient.Config{Brokers: k.Addrs, TopicPrefix: "demo", ConnTimeout: 5 * time.Second, BatchLinger: time.Millisecond,
		MaxRequestBytes: 1 << 20, StartAtEarliest: true, FetchMaxBytes: 10 << 20, FetchMaxWait: 50 * time.Millisecond,
		Partitions: 1, ReplicationFactor: 1}
	topic := cfg.Topic("crawled_firehose")
	harness.WaitFor(t, "the crawled topic", 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return cfg.EnsureTopics(ctx, kafkaclient.TopicSpec{Name: topic, Partitions: 1}) == nil
	})
	r, err := cfg.NewPartitionReader(topic, 0, kafka.FirstOffset)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		r.Close()
	})
	p := &pageLog{counts: map[string]int{}}
	go func() {
		defer close(done)
		for {
			msg, err := r.ReadMessage(ctx)
			if err != nil {
				return
			}
			var page spider.Page
			if json.Unmarshal(msg.Value, &page) != nil || page.CrawlID != crawlID {
				continue
			}
			p.mu.Lock()
			p.counts[page.URL]++
			p.n++
			p.mu.Unlock()
		}
	}()
	return p
}

// startREST starts the REST service on a port of its own with env and
// returns the URL of crawlID's progress (GET /crawls/<crawlid>).
func startREST(t *testing.T, env map[string]string, crawlID string) string {
	t.Helper()
	port := harness.Port(t)
	restEnv := maps.Clone(env)
	restEnv["FLASK_HOST"], restEnv["FLASK_PORT"] = "127.0.0.1", strconv.Itoa(port)
	startComponents(t, restEnv, "rest")
	return fmt.Sprintf("http://127.0.0.1:%d/crawls/%s?appid=e2e&spiderid=link", port, crawlID)
}

// restProgress is the crawl's progress as the REST service at url answers
// it; an error for anything but a 200 with a progress.
func restProgress(url string) (*ledger.Progress, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var answer struct {
		Data struct {
			Progress *ledger.Progress `json:"progress"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, fmt.Errorf("%s: %w", resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || answer.Data.Progress == nil {
		return nil, fmt.Errorf("%s without a progress", resp.Status)
	}
	return answer.Data.Progress, nil
}
