package scheduler_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// clusterConfig is config() on a Redis Cluster.
func clusterConfig() scheduler.Config {
	cfg := config()
	cfg.Layout = rediskeys.Cluster
	return cfg
}

// runOnCluster runs a scheduler with cfg on the cluster rc until the test
// ends; stop ends it (and its lease renewals) earlier.
func runOnCluster(t *testing.T, rc *harness.RedisCluster, cfg scheduler.Config) (*scheduler.Scheduler, *redis.ClusterClient, context.CancelFunc) {
	t.Helper()
	c := rc.TestClient(t)
	s, stop := startScheduler(t, c, cfg)
	return s, c, stop
}

// seedOnCluster queues a seed of crawl c1 for each URL through the
// cluster layout, as the Kafka Monitor does, and returns their domains.
func seedOnCluster(t *testing.T, c *redis.ClusterClient, urls []string) []string {
	t.Helper()
	var seeds []ledger.Seed
	var domains []string
	for _, u := range urls {
		r, member := testRequest(t, u, "c1", 50)
		d, err := rediskeys.DomainOfURL(u)
		if err != nil {
			t.Fatal(err)
		}
		domains = append(domains, d)
		seeds = append(seeds, ledger.Seed{Queue: rediskeys.Cluster.Queue("link", d), Score: r.Score(), Member: string(member),
			Crawl: clusterCrawl, Domain: d})
	}
	pipe := c.Pipeline()
	ledger.QueueSeedsIn(context.Background(), pipe, rediskeys.Cluster, seeds, time.Now(), time.Hour)
	if _, err := pipe.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	return domains
}

var clusterCrawl = ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "c1"}

// A crawl of 20 domains on a Redis Cluster: each seed page links to a page
// of its own domain, a page of the next domain and a page of the one after
// (which the next domain's seed links to as well, a duplicate across
// pages in another slot). Every page is crawled exactly once, the domains'
// keys are on all three masters, and the crawl's ledger, summed over its
// shares, has counted every request and has nothing outstanding. In both
// duplicate filter modes: with DUPEFILTER_MODE bloom each domain has a
// compact filter of its own in its slot, started at 1,024 requests.
func TestClusterCrawlFollowsLinksAcrossSlotsOnce(t *testing.T) {
	for _, mode := range []string{scheduler.DupeExact, scheduler.DupeBloom} {
		t.Run(mode, func(t *testing.T) { crawlAcrossSlots(t, mode) })
	}
}

func crawlAcrossSlots(t *testing.T, mode string) {
	rc := harness.StartRedisCluster(t)
	cfg := clusterConfig()
	cfg.DupeMode, cfg.BloomRate, cfg.BloomCapacity = mode, 0.001, 100000 // DUPEFILTER_* defaults
	s, c, _ := runOnCluster(t, rc, cfg)
	const n = 20
	var urls, want []string
	for i := range n {
		urls = append(urls, fmt.Sprintf("http://d%02d.com/", i))
		want = append(want, fmt.Sprintf("http://d%02d.com/", i), fmt.Sprintf("http://d%02d.com/a", i), fmt.Sprintf("http://d%02d.com/b", i))
	}
	domains := seedOnCluster(t, c, urls)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	crawled := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var dupes, queued int
	for len(crawled) < len(want) {
		it, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("crawled %d of %d pages: %v (%v)", len(crawled), len(want), err, slices.Sorted(maps.Keys(crawled)))
		}
		crawled[it.Request.URL]++
		if !strings.HasPrefix(it.Queue, "cluster:{"+it.Domain+"}:queue:") {
			t.Errorf("popped from %s, not a cluster queue of %s", it.Queue, it.Domain)
		}
		var links []*crawlrequest.Request
		if it.Request.CurDepth == 0 {
			var i int
			fmt.Sscanf(it.Domain, "d%02d.com", &i)
			links = []*crawlrequest.Request{it.Request.Follow(fmt.Sprintf("http://d%02d.com/a", i)),
				it.Request.Follow(fmt.Sprintf("http://d%02d.com/b", (i+1)%n)),
				it.Request.Follow(fmt.Sprintf("http://d%02d.com/a", (i+2)%n))}
		}
		wg.Go(func() {
			tally := &ledger.Tally{}
			tally.Fetched(it.Crawl(), 200)
			tally.Published(it.Crawl(), false)
			out, err := s.Finish(context.Background(), it, tally, links, nil)
			if err != nil {
				t.Errorf("finish %s: %v", it.Request.URL, err)
			}
			mu.Lock()
			queued += out.Queued
			dupes += out.Refused[ledger.RefusedDuplicate]
			mu.Unlock()
		})
	}
	wg.Wait()
	if !slices.Equal(slices.Sorted(maps.Keys(crawled)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("crawled %v, want %v", slices.Sorted(maps.Keys(crawled)), want)
	}
	for u, k := range crawled {
		if k != 1 {
			t.Errorf("%s crawled %d times", u, k)
		}
	}
	if queued != 2*n || dupes != n {
		t.Errorf("follow-ups: %d queued, %d duplicates; want %d and %d", queued, dupes, 2*n, n)
	}
	// Nothing more comes out, and nothing is leased.
	short, cancelShort := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelShort()
	if it, err := s.Next(short); err == nil {
		t.Errorf("popped %s after the crawl", it.Request.URL)
	}
	for _, d := range domains {
		owners, records := s.LeasesOf(d).Keys()
		if !strings.HasPrefix(owners, "cluster:{"+d+"}:leases:link") {
			t.Errorf("lease set of %s at %s", d, owners)
		}
		if k := c.HLen(context.Background(), records).Val(); k != 0 {
			t.Errorf("%d leases left in %s", k, records)
		}
	}
	masters := map[string]bool{}
	for _, d := range domains {
		masters[rc.MasterOf(t, rediskeys.Cluster.Queue("link", d)).Addr] = true
	}
	if len(masters) != 3 {
		t.Errorf("the 20 domains' keys are on %d masters, want 3", len(masters))
	}
	p, consistent, err := ledger.ReadSum(context.Background(), c, clusterCrawl, domains)
	if err != nil || !consistent {
		t.Fatalf("ledger sum: %v, consistent %v", err, consistent)
	}
	if p.Seeds != n || p.Enqueued != 2*n || p.Queued != 0 || p.InFlight != 0 || p.Published != 3*n || p.Refused["duplicate"] != n {
		t.Errorf("ledger sum %+v: want %d seeds, %d enqueued, %d published, %d duplicates, nothing outstanding", p, n, 2*n, 3*n, n)
	}
	if est := p.DupeFilterFalseDropsEstimate; (mode == scheduler.DupeExact && est != 0) || est < 0 || est > 1e-3 {
		t.Errorf("false drops estimate %v in mode %s", est, mode)
	}
	for _, d := range domains {
		bits, meta := rediskeys.Cluster.BloomFilter("link", d, "c1")
		exact := c.Exists(context.Background(), rediskeys.Cluster.DupeFilter("link", d, "c1")).Val()
		compact := c.Exists(context.Background(), bits, meta).Val()
		if (mode == scheduler.DupeExact) != (exact == 1 && compact == 0) || (mode == scheduler.DupeBloom) != (exact == 0 && compact == 2) {
			t.Errorf("%s in mode %s: %d exact filter, %d keys of a compact one", d, mode, exact, compact)
		}
		if capacity := c.HGet(context.Background(), meta, "capacity").Val(); mode == scheduler.DupeBloom && capacity != "1024" {
			t.Errorf("%s's compact filter starts at %q requests, want 1024", d, capacity)
		}
	}
}

// A crawler that stops renewing its leases (killed) holds requests of
// domains on every master, each leased in its domain's lease set: another
// crawler finds those sets on every master, returns the requests to their
// queues once the leases expire, and crawls them.
func TestClusterReapsTheLeasesOfADeadCrawlerOnEveryMaster(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	cfg := clusterConfig()
	cfg.LeaseTTL, cfg.ReapInterval = time.Second, 200*time.Millisecond
	_, _, kill, urls, _ := leaseOnEveryMaster(t, rc, cfg, "r")
	kill()
	survivorCrawls(t, rc, cfg, urls)
}

// leaseOnEveryMaster runs a crawler with cfg on rc which pops a seed of
// each of 9 domains (named from prefix) whose lease sets are on all three
// masters; it returns the crawler, the client, what kills it, the seeds'
// URLs and their domains.
func leaseOnEveryMaster(t *testing.T, rc *harness.RedisCluster, cfg scheduler.Config, prefix string) (*scheduler.Scheduler, *redis.ClusterClient, context.CancelFunc, []string, []string) {
	t.Helper()
	s, c, kill := runOnCluster(t, rc, cfg)
	var urls []string
	for i := range 9 {
		urls = append(urls, fmt.Sprintf("http://%s%02d.com/", prefix, i))
	}
	domains := seedOnCluster(t, c, urls)
	masters := map[string]bool{}
	for _, d := range domains {
		masters[rc.MasterOf(t, cfg.Layout.Leases("link", d)).Addr] = true
	}
	if len(masters) != 3 {
		t.Fatalf("the lease sets of %v are on %d masters; the test wants 3", domains, len(masters))
	}
	for range urls {
		next(t, s, 20*time.Second)
	}
	return s, c, kill, urls, domains
}

// A live crawler holding requests of domains on every master keeps each
// domain's lease set's owner renewed (its renewals go in one pipeline,
// each master's part at once): every owner's deadline moves on, and
// another crawler reaping meanwhile returns none of the requests; then,
// killed, its requests are reaped from every master.
func TestClusterRenewsTheLeasesOfEveryMaster(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	cfg := clusterConfig()
	// A lease of 3 s, renewed every 375 ms: a loaded machine's pauses do
	// not outlast it.
	cfg.LeaseTTL, cfg.ReapInterval = 3*time.Second, 200*time.Millisecond
	holder, c, kill, urls, domains := leaseOnEveryMaster(t, rc, cfg, "w")
	ctx := context.Background()
	deadline := func(d string) float64 {
		l := holder.LeasesOf(d)
		owners, _ := l.Keys()
		v, err := c.ZScore(ctx, owners, l.Owner()).Result()
		if err != nil {
			t.Fatalf("the owner of %s's lease set: %v", d, err)
		}
		return v
	}
	first := map[string]float64{}
	for _, d := range domains {
		first[d] = deadline(d)
	}
	reaper, _, stopReaper := runOnCluster(t, rc, cfg)
	// Two TTLs on: a set left unrenewed would have been reaped by then.
	harness.WaitFor(t, "every lease set's owner renewed two TTLs on", 30*time.Second, func() bool {
		for _, d := range domains {
			if deadline(d) < first[d]+6 {
				return false
			}
		}
		return true
	})
	if n := reaper.Stats().Reaped; n != 0 {
		t.Fatalf("a reaper returned %d requests of a live crawler renewing them", n)
	}
	stopReaper() // the survivor alone reaps and crawls what the holder leaves
	kill()
	survivorCrawls(t, rc, cfg, urls)
}

// survivorCrawls runs another crawler with cfg on rc, which must crawl
// every one of urls, leased by a crawler killed before, once their leases
// expired.
func survivorCrawls(t *testing.T, rc *harness.RedisCluster, cfg scheduler.Config, urls []string) {
	t.Helper()
	survivor, _, _ := runOnCluster(t, rc, cfg)
	got := map[string]bool{}
	for range urls {
		it := next(t, survivor, 30*time.Second)
		got[it.Request.URL] = true
		if err := survivor.Done(context.Background(), it, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != len(urls) {
		t.Errorf("the survivor crawled %v, want every one of %v", slices.Sorted(maps.Keys(got)), urls)
	}
	if st := survivor.Stats(); st.Reaped < int64(len(urls)) {
		t.Errorf("the survivor reaped %d requests, want %d", st.Reaped, len(urls))
	}
}

// On a Redis Cluster a retry goes back to its domain's queue in the step
// that ends its lease, counted in its crawl's share of the domain; a
// stopped crawl's follow-ups (the crawl blacklist, read before the
// scripts) are refused and counted, nothing queued; Release returns what
// is in flight.
func TestClusterRetryBlacklistAndRelease(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	s, c, _ := runOnCluster(t, rc, clusterConfig())
	domains := seedOnCluster(t, c, []string{"http://one.com/", "http://two.com/"})
	ctx := context.Background()

	it := next(t, s, 20*time.Second)
	tally := &ledger.Tally{}
	tally.Retried(it.Crawl())
	if err := s.Retry(ctx, it, it.Request.Retry(), tally); err != nil {
		t.Fatal(err)
	}
	share := clusterCrawl.LedgerIn(rediskeys.Cluster, it.Domain).Hash
	if got := c.HGet(ctx, share, ledger.FieldRetried).Val(); got != "1" {
		t.Errorf("retried in %s: %q, want 1", share, got)
	}
	first, second := next(t, s, 20*time.Second), next(t, s, 20*time.Second)
	if first.Request.URL == second.Request.URL {
		t.Fatalf("popped %s twice", first.Request.URL)
	}

	if err := c.SAdd(ctx, rediskeys.BlacklistKey("link"), "testapp||c1").Err(); err != nil {
		t.Fatal(err)
	}
	links := []*crawlrequest.Request{first.Request.Follow("http://one.com/x"), first.Request.Follow("http://three.com/y")}
	out, err := s.Finish(ctx, first, &ledger.Tally{}, links, nil)
	if err != nil || out.Queued != 0 || out.Refused[ledger.RefusedCrawlBlacklisted] != 2 {
		t.Fatalf("finish of a stopped crawl's page: %+v, %v; want both links refused as crawl_blacklisted", out, err)
	}
	p, _, err := ledger.ReadSum(ctx, c, clusterCrawl, append(domains, "three.com"))
	if err != nil || p.Refused[string(ledger.RefusedCrawlBlacklisted)] != 2 || p.Enqueued != 0 {
		t.Errorf("ledger sum %+v, %v: want 2 refused as crawl_blacklisted, nothing enqueued", p, err)
	}

	if n, err := s.Release(ctx); err != nil || n != 1 {
		t.Fatalf("released %d, %v; want 1", n, err)
	}
	if got := c.ZCard(ctx, rediskeys.Cluster.Queue("link", second.Domain)).Val(); got != 1 {
		t.Errorf("%s's queue holds %d after the release, want 1", second.Domain, got)
	}
}
