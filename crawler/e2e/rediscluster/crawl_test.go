// Package rediscluster_test crawls on a Redis Cluster (docs/redis-cluster.md):
// the Kafka Monitor and crawler binaries with REDIS_CLUSTER_NODES set, a
// real Redis Cluster of three masters and three replicas
// (harness.StartRedisCluster), the in-process kfake broker and loopback
// test sites, one domain each.
//
//	go test -race -count=1 ./crawler/e2e/rediscluster/
package rediscluster_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

func TestMain(m *testing.M) { bins.Main(m) }

var bins = harness.Binaries{Packages: []string{"./crawler/cmd/crawler", "./kafka-monitor/cmd/kafka-monitor", "./redis-monitor/cmd/redis-monitor",
	"./rest/cmd/rest"}}

// notFile leaves out the links to files, which the crawler does not follow.
func notFile(link string) bool {
	for _, f := range testsite.FilePaths() {
		if strings.HasSuffix(link, f) {
			return false
		}
	}
	return true
}

// startSites starts n test sites, each on an address of its own in
// 127.0.0.0/8 (a domain each), of one page tree of depth 1 and fan-out 2
// unless opts say otherwise; the first's "/" links to every other's,
// and each other's "/" to the next one's (a link met twice, in another
// slot than the page that has it).
func startSites(t testing.TB, n int, opts ...testsite.Option) []*testsite.Site {
	t.Helper()
	var sites []*testsite.Site
	for i := range n {
		sites = append(sites, testsite.StartAt(t, fmt.Sprintf("127.0.0.%d:0", i+2), append([]testsite.Option{testsite.WithPages(1), testsite.WithTree(2, 1)}, opts...)...))
	}
	var roots []string
	for _, s := range sites[1:] {
		roots = append(roots, s.URL("/"))
	}
	sites[0].SetPeers(roots...)
	for i := 1; i < n; i++ {
		sites[i].SetPeers(sites[1+i%(n-1)].URL("/"))
	}
	return sites
}

// A crawl fed to the Kafka Monitor on a Redis Cluster, crawled by two
// crawlers: 20 domains, their keys on all three masters; every page the
// crawl reaches is published exactly once, nothing is left queued or
// leased, and the crawl's ledger, summed over its shares on every master,
// has nothing outstanding and counts what was published; the Redis Monitor
// publishes its crawl-complete once.
func TestCrawlOnARedisCluster(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	sites := startSites(t, 20)
	seed := sites[0].URL("/")
	want := testsite.Reachable(seed, 2, notFile, sites...)

	env := clusterEnv(rc, k, nil)
	startComponents(t, env, "kafka-monitor", "crawler-1", "crawler-2", "redis-monitor")
	outbound := readAll(t, k, "outbound_firehose")
	feed(t, env, fmt.Sprintf(`{"url": %q, "appid": "e2e", "crawlid": "rc1", "spiderid": "link", "maxdepth": 2}`, seed))

	counts := results(t, k, "rc1", want, 120*time.Second)
	c := rc.TestClient(t)
	crawl := ledger.Crawl{SpiderID: "link", AppID: "e2e", CrawlID: "rc1"}
	var domains []string
	harness.WaitFor(t, "the crawl's ledger to have nothing outstanding", 60*time.Second, func() bool {
		shares, err := ledger.ClusterShares(context.Background(), c, crawl.SpiderID, crawl.AppID, crawl.CrawlID)
		if err != nil {
			return false
		}
		domains = shares[crawl] // all its shares: a completed crawl leaves the active sets
		p, consistent, err := ledger.ReadSum(context.Background(), c, crawl, domains)
		return err == nil && consistent && p != nil && p.Queued == 0 && p.InFlight == 0 && p.Published == int64(len(want))
	})
	for u, n := range counts {
		if !slices.Contains(want, u) {
			t.Errorf("published %s, which the crawl does not reach", u)
		}
		if n != 1 {
			t.Errorf("published %s %d times", u, n)
		}
	}
	if len(domains) != len(sites) {
		t.Errorf("the crawl has shares in %d domains, want %d: %v", len(domains), len(sites), domains)
	}
	masters := map[string]bool{}
	for _, d := range domains {
		masters[rc.MasterOf(t, rediskeys.Cluster.Queue("link", d)).Addr] = true
	}
	if len(masters) != 3 {
		t.Errorf("the %d domains' keys are on %d masters, want 3", len(domains), len(masters))
	}
	p, _, err := ledger.ReadSum(context.Background(), c, crawl, domains)
	if err != nil {
		t.Fatal(err)
	}
	if p.Seeds != 1 || p.Done != p.Seeds+p.Enqueued || p.Refused[string(ledger.RefusedDuplicate)] == 0 {
		t.Errorf("ledger sum %+v: want 1 seed, done = seeds + enqueued, duplicates refused", p)
	}
	left := leftovers(t, c)
	if len(left) > 0 {
		t.Errorf("queued or leased after the crawl: %v", left)
	}
	// The Redis Monitor publishes the crawl's crawl-complete once, with the
	// summed counts; its marker then says done, so no monitor claims it again.
	m, _ := outbound.first(t, "the crawl-complete of rc1", completion("rc1"))
	if m["reason"] != "finished" || field(m, "progress", "state") != "complete" || num(m, "progress", "seeds") != 1 ||
		num(m, "progress", "published") != int64(len(want)) || num(m, "progress", "done") != p.Seeds+p.Enqueued {
		t.Errorf("crawl-complete %v: want finished, 1 seed, %d published, everything done", m, len(want))
	}
	harness.WaitFor(t, "rc1's completion marker to say done", 30*time.Second, func() bool {
		v, err := c.Get(context.Background(), rediskeys.Cluster.Completed("link", "e2e", "rc1")).Result()
		return err == nil && strings.HasPrefix(v, "done|")
	})
	if all, _ := outbound.where(completion("rc1")); len(all) != 1 {
		t.Errorf("rc1 completed %d times, want once", len(all))
	}
}

// clusterEnv is the components' settings for the Redis Cluster rc and
// the broker k, with more.
func clusterEnv(rc *harness.RedisCluster, k *harness.Kafka, more map[string]string) map[string]string {
	env := harness.ClusterSettings(1, k.Hosts(), "") // REDIS_PORT 1: nothing there, the cluster is used
	env[redisconn.ClusterNodes.Name()] = rc.Seeds()
	env["LOG_LEVEL"], env["SC_LOG_LEVEL"] = "INFO", "INFO"
	for name, v := range more {
		env[name] = v
	}
	return env
}

// startComponents starts the named components with env, supervised: the
// test fails if one exits before the test ends it. A name is
// "kafka-monitor", "redis-monitor", or a crawler's (any other name).
func startComponents(t testing.TB, env map[string]string, names ...string) {
	t.Helper()
	for _, name := range names {
		path, args := bins.Path(t, "crawler"), []string(nil)
		switch name {
		case "kafka-monitor":
			path, args = bins.Path(t, "kafka-monitor"), []string{"run"}
		case "redis-monitor":
			path = bins.Path(t, "redis-monitor")
		case "rest":
			path = bins.Path(t, "rest")
		}
		harness.StartProcess(t, harness.ProcessSpec{Name: name, Path: path, Args: args, Env: harness.Environ(env),
			StopGrace: 10 * time.Second, Supervise: true})
	}
}

// feed sends req to the incoming topic (kafka-monitor feed).
func feed(t testing.TB, env map[string]string, req string) {
	t.Helper()
	cmd := exec.Command(bins.Path(t, "kafka-monitor"), "feed", req)
	cmd.Env = harness.Environ(env)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("feed: %v\n%s", err, out)
	}
}

// results reads the crawled firehose until every url of want has a result
// of crawlID, then a second longer (a duplicate would come soon after),
// and returns how many results each url got.
func results(t *testing.T, k *harness.Kafka, crawlID string, want []string, timeout time.Duration) map[string]int {
	t.Helper()
	pages := readPages(t, k, crawlID)
	complete := func() bool {
		counts := pages.snapshot()
		for _, u := range want {
			if counts[u] == 0 {
				return false
			}
		}
		return true
	}
	if !harness.Until(timeout, complete) {
		counts := pages.snapshot()
		t.Fatalf("%d of %d pages published; missing %v", len(counts), len(want),
			slices.DeleteFunc(slices.Clone(want), func(u string) bool { return counts[u] > 0 }))
	}
	time.Sleep(time.Second) // not a synchronisation: the time a duplicate has to show
	return pages.snapshot()
}

// leftovers are the spider's cluster queues and lease records that hold
// anything, found on every master.
func leftovers(t *testing.T, c *redis.ClusterClient) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	out := map[string]int64{}
	var mu sync.Mutex
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		for _, pattern := range []string{"cluster:{*}:queue:link", "cluster:{*}:leases:link:items"} {
			keys, err := m.Keys(ctx, pattern).Result()
			if err != nil {
				return err
			}
			for _, key := range keys {
				n, err := m.ZCard(ctx, key).Result()
				if err != nil {
					n, err = m.HLen(ctx, key).Result()
				}
				if err != nil {
					return err
				}
				if n > 0 {
					mu.Lock()
					out[key] = n
					mu.Unlock()
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
