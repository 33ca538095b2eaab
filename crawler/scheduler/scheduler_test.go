package scheduler_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

var redisServer harness.SharedRedis

func TestMain(m *testing.M) { redisServer.Main(m) }

func config() scheduler.Config {
	return scheduler.Config{
		SpiderID: "link", Hits: 100, Window: 60 * time.Second, Moderated: false,
		ByType: true, ByIP: false, IPRegex: regexp.MustCompile(`(\d+\.\d+\.\d+\.\d+)`), IPRefresh: time.Minute,
		QueueRefresh: 10 * time.Second, QueueTimeout: time.Hour, BacklogBlacklist: true, Persist: true,
		DupeTimeout: 600 * time.Second, DomainMaxPageTimeout: 600 * time.Second, GlobalPageTimeout: 600 * time.Second,
		LeaseTTL: 20 * time.Second, ReapInterval: 5 * time.Second, Concurrency: 16, PerDomain: 8,
	}
}

type fixture struct {
	rdb   *redis.Client
	sched *scheduler.Scheduler
	stop  context.CancelFunc
}

// start flushes Redis and runs a scheduler with cfg.
func start(t *testing.T, cfg scheduler.Config) *fixture {
	t.Helper()
	if err := redisServer.FlushAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	return run(t, cfg)
}

// run runs another scheduler on the same Redis.
func run(t *testing.T, cfg scheduler.Config) *fixture {
	t.Helper()
	rdb := redisServer.TestClient(t)
	s, stop := startScheduler(t, rdb, cfg)
	return &fixture{rdb: rdb, sched: s, stop: stop}
}

// startScheduler runs a scheduler with cfg on rdb (ERROR logs only) until
// the test ends; stop ends it (and its lease renewals) earlier.
func startScheduler(t *testing.T, rdb redis.UniversalClient, cfg scheduler.Config) (s *scheduler.Scheduler, stop context.CancelFunc) {
	t.Helper()
	lc := logfactory.DefaultConfig()
	lc.Level = "ERROR"
	log, _ := logfactory.New(lc)
	return startLogging(t, rdb, cfg, log)
}

// startLogging is startScheduler logging to log.
func startLogging(t *testing.T, rdb redis.UniversalClient, cfg scheduler.Config, log *logfactory.Logger) (s *scheduler.Scheduler, stop context.CancelFunc) {
	t.Helper()
	s, err := scheduler.New(rdb, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, cancel
}

// testRequest is a crawl request of testapp for the link spider, and its
// queue member.
func testRequest(t *testing.T, url, crawlid string, priority int) (*crawlrequest.Request, []byte) {
	t.Helper()
	r := &crawlrequest.Request{URL: url, AppID: "testapp", CrawlID: crawlid, SpiderID: "link", Priority: priority, MaxDepth: 1}
	member, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return r, member
}

func queueRequest(t *testing.T, rdb *redis.Client, url, crawlid string, priority int) {
	t.Helper()
	r, member := testRequest(t, url, crawlid, priority)
	key := "link:" + domainOf(url) + ":queue"
	if err := rdb.ZAdd(context.Background(), key, redis.Z{Score: r.Score(), Member: member}).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.Publish(context.Background(), "link:queue-announce", key) // as the Kafka Monitor does
}

func domainOf(url string) string {
	m := regexp.MustCompile(`//([^/:]+)`).FindStringSubmatch(url)
	if regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+$`).MatchString(m[1]) {
		return m[1] + "."
	}
	return m[1]
}

func next(t *testing.T, s *scheduler.Scheduler, within time.Duration) *scheduler.Item {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	it, err := s.Next(ctx)
	if err != nil {
		t.Fatalf("no request within %v: %v", within, err)
	}
	return it
}

func TestFindsExistingQueuesAndPopsByPriority(t *testing.T) {
	f0 := start(t, config())
	f0.stop()
	queueRequest(t, f0.rdb, "http://a.com/low", "c1", 1)
	queueRequest(t, f0.rdb, "http://a.com/high", "c1", 90)
	f := run(t, config())
	it := next(t, f.sched, 10*time.Second)
	if it.Request.URL != "http://a.com/high" || it.Domain != "a.com" || it.Queue != "link:a.com:queue" {
		t.Fatalf("first item %+v", it.Request)
	}
	if it2 := next(t, f.sched, 10*time.Second); it2.Request.URL != "http://a.com/low" {
		t.Fatalf("second item %+v", it2.Request)
	}
}

func TestAnnouncedQueueIsServedWithoutWaitingForARescan(t *testing.T) {
	cfg := config()
	cfg.QueueRefresh = time.Hour // only the announcement can bring it
	f := start(t, cfg)
	ctx := context.Background()
	// Let the subscription settle, then announce a new domain as the Kafka Monitor does.
	deadline := time.Now().Add(10 * time.Second)
	for f.rdb.PubSubNumSub(ctx, "link:queue-announce").Val()["link:queue-announce"] == 0 {
		if time.Now().After(deadline) {
			t.Fatal("scheduler never subscribed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	queueRequest(t, f.rdb, "http://new.com/", "c1", 1)
	f.rdb.Publish(ctx, "link:queue-announce", "link:new.com:queue")
	if it := next(t, f.sched, 5*time.Second); it.Request.URL != "http://new.com/" {
		t.Fatalf("got %+v", it.Request)
	}
}

func TestADeniedDomainDoesNotBlockOthers(t *testing.T) {
	f := start(t, config())
	for i := range 5 {
		queueRequest(t, f.rdb, fmt.Sprintf("http://slow.com/%d", i), "c1", 50)
		queueRequest(t, f.rdb, fmt.Sprintf("http://fast.com/%d", i), "c1", 1)
	}
	f.sched.SetDomainConfig(domainconfig.Document{Domains: map[string]domainconfig.Domain{"slow.com": {Window: 60, Hits: 1, Scale: 1}}})
	counts := map[string]int{}
	for range 6 {
		it := next(t, f.sched, 10*time.Second)
		counts[it.Domain]++
		if err := f.sched.Done(context.Background(), it, nil); err != nil {
			t.Fatal(err)
		}
	}
	if counts["slow.com"] != 1 || counts["fast.com"] != 5 {
		t.Fatalf("popped %v; want 1 from the throttled domain and 5 from the other", counts)
	}
	if hits, window, blocked := f.sched.Throttle("slow.com"); hits != 1 || window != time.Minute || blocked {
		t.Fatalf("throttle %d %v %v", hits, window, blocked)
	}
	// The window key has the type throttle style's name.
	if n := f.rdb.ZCard(context.Background(), "link:slow.com:throttle_window").Val(); n != 1 {
		t.Fatalf("link:slow.com:throttle_window holds %d hits, want 1", n)
	}
}

func TestBlacklistedDomainIsNotCrawledUntilRemoved(t *testing.T) {
	f := start(t, config())
	queueRequest(t, f.rdb, "http://ebay.com/", "c1", 1)
	f.sched.SetDomainConfig(domainconfig.Document{Blacklist: []string{"ebay.com"}})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	if it, err := f.sched.Next(ctx); err == nil {
		t.Fatalf("popped %s from a blacklisted domain", it.Request.URL)
	}
	cancel()
	f.sched.SetDomainConfig(domainconfig.Document{})
	if it := next(t, f.sched, 5*time.Second); it.Domain != "ebay.com" {
		t.Fatal(it.Domain)
	}
}

func TestLeasesDoneRetryAndRelease(t *testing.T) {
	f := start(t, config())
	ctx := context.Background()
	queueRequest(t, f.rdb, "http://a.com/1", "c1", 5)
	queueRequest(t, f.rdb, "http://a.com/2", "c1", 4)
	queueRequest(t, f.rdb, "http://a.com/3", "c1", 3)
	a, b, c := next(t, f.sched, 5*time.Second), next(t, f.sched, 5*time.Second), next(t, f.sched, 5*time.Second)
	if n, _ := f.sched.Leases().Count(ctx); n != 3 || f.sched.InFlight() != 3 {
		t.Fatalf("%d leases, %d in flight; want 3", n, f.sched.InFlight())
	}
	if err := f.sched.Done(ctx, a, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.sched.Retry(ctx, b, b.Request.Retry(), nil); err != nil {
		t.Fatal(err)
	}
	if n, err := f.sched.Release(ctx); err != nil || n != 1 {
		t.Fatalf("released %d, %v", n, err)
	}
	_ = c
	members := f.rdb.ZRangeWithScores(ctx, "link:a.com:queue", 0, -1).Val()
	if len(members) != 2 {
		t.Fatalf("queue %v", members)
	}
	retried, _ := crawlrequest.Decode([]byte(members[1].Member.(string)))
	if members[0].Score != -3 || retried.URL != "http://a.com/2" || retried.RetryTimes != 1 || math.Floor(members[1].Score) != 6 {
		t.Fatalf("queue after retry and release: %v", members)
	}
	if n, _ := f.sched.Leases().Count(ctx); n != 0 {
		t.Fatalf("%d leases left", n)
	}
}

// startWithThreeShortLeases starts a scheduler with 1 s leases reaped every
// 100 ms and queues three requests of crawl c1 (http://a.com/0 to 2) for
// it; cfg is its configuration, for another scheduler on the same Redis.
func startWithThreeShortLeases(t *testing.T) (f *fixture, cfg scheduler.Config) {
	t.Helper()
	cfg = config()
	cfg.LeaseTTL, cfg.ReapInterval = time.Second, 100*time.Millisecond
	f = start(t, cfg)
	for i := range 3 {
		queueRequest(t, f.rdb, fmt.Sprintf("http://a.com/%d", i), "c1", 1)
	}
	return f, cfg
}

func TestAnotherSchedulerReturnsADeadCrawlersRequests(t *testing.T) {
	dead, cfg := startWithThreeShortLeases(t)
	for range 3 {
		next(t, dead.sched, 5*time.Second)
	}
	dead.stop() // killed: no release, no renewal
	survivor := run(t, cfg)
	seen := map[string]bool{}
	for range 3 {
		it := next(t, survivor.sched, 10*time.Second)
		seen[it.Request.URL] = true
		_ = survivor.sched.Done(context.Background(), it, nil)
	}
	if len(seen) != 3 {
		t.Fatalf("recovered %v", seen)
	}
	if survivor.sched.Stats().Reaped != 3 {
		t.Fatalf("reaped %d", survivor.sched.Stats().Reaped)
	}
}

func TestLeasesStayRenewedWhileEveryPooledConnectionWaitsOnRedis(t *testing.T) {
	// Under load every connection of a crawler's pool waits on Redis behind
	// its pops, enqueues and acknowledgements. A renewal queued behind them
	// for a connection came too late: the leases expired while their
	// requests were being crawled, and another crawler crawled them again.
	holder, cfg := startWithThreeShortLeases(t)
	items := make([]*scheduler.Item, 3)
	for i := range items {
		items[i] = next(t, holder.sched, 5*time.Second)
	}
	reaper := run(t, cfg)
	ctx := context.Background()
	// Every connection the holder's client may open waits three lease
	// times on a list nobody pushes to.
	pool := holder.rdb.Options().PoolSize
	var busy sync.WaitGroup
	for range pool {
		busy.Go(func() { holder.rdb.BLPop(ctx, 3*cfg.LeaseTTL, "nothing-to-pop") })
	}
	deadline := time.Now().Add(5 * time.Second)
	for blockedClients(t, reaper.rdb) < pool {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d connections blocked", blockedClients(t, reaper.rdb), pool)
		}
		time.Sleep(10 * time.Millisecond)
	}
	busy.Wait()
	if n, _ := holder.sched.Leases().Count(ctx); n != 3 || reaper.sched.Stats().Reaped != 0 {
		t.Fatalf("%d leases held, %d reaped while their holder was renewing them", n, reaper.sched.Stats().Reaped)
	}
	for _, it := range items {
		if err := holder.sched.Done(ctx, it, nil); err != nil {
			t.Fatal(err)
		}
	}
	if lost := holder.sched.Stats().Lost; lost != 0 {
		t.Fatalf("%d leases lost", lost)
	}
}

// blockedClients is how many clients wait in a blocking command.
func blockedClients(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := -1
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "blocked_clients:"); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	if n < 0 {
		t.Fatalf("no blocked_clients in INFO clients:\n%s", info)
	}
	return n
}

func TestEnqueueFiltersAndAnnounces(t *testing.T) {
	f := start(t, config())
	ctx := context.Background()
	sub := harness.Subscribe(t, f.rdb, "link:queue-announce")
	parent := &crawlrequest.Request{URL: "http://a.com/", AppID: "testapp", CrawlID: "c1", SpiderID: "link", Priority: 1, MaxDepth: 2}
	kids := []*crawlrequest.Request{
		parent.Follow("http://a.com/x"), parent.Follow("http://a.com/x#frag"), parent.Follow("http://a.com/"),
		parent.Follow("http://b.com/y"), parent.Follow("not a url"),
	}
	got, err := f.sched.Enqueue(ctx, parent, kids, nil)
	if err != nil {
		t.Fatal(err)
	}
	// /x#frag is /x; / is the parent itself, already seen.
	if got.Queued != 2 || got.Refused[ledger.RefusedDuplicate] != 2 || got.Refused[ledger.RefusedInvalidURL] != 1 {
		t.Fatalf("enqueued %+v", got)
	}
	announced := map[string]bool{}
	for _, queue := range harness.Messages(t, sub, 2, 10*time.Second) {
		announced[queue] = true
	}
	if !announced["link:a.com:queue"] || !announced["link:b.com:queue"] {
		t.Fatalf("announced %v", announced)
	}
	if ttl := f.rdb.TTL(ctx, "link:dupefilter:c1").Val(); ttl <= 0 || ttl > 600*time.Second {
		t.Fatalf("dupefilter ttl %v", ttl)
	}
	// A stopped crawl queues nothing.
	f.rdb.SAdd(ctx, "link:blacklist", "testapp||c1")
	if got, _ := f.sched.Enqueue(ctx, parent, []*crawlrequest.Request{parent.Follow("http://a.com/new")}, nil); got.Queued != 0 || got.Refused[ledger.RefusedCrawlBlacklisted] != 1 {
		t.Fatalf("blacklisted crawl enqueued %+v", got)
	}
}

func TestPageLimits(t *testing.T) {
	cfg := config()
	cfg.GlobalPageLimit = 4
	f := start(t, cfg)
	ctx := context.Background()
	parent := &crawlrequest.Request{URL: "http://a.com/", AppID: "testapp", CrawlID: "c1", SpiderID: "link", Priority: 1, MaxDepth: 2, DomainMaxPages: 3}
	var kids []*crawlrequest.Request
	for i := range 5 {
		kids = append(kids, parent.Follow(fmt.Sprintf("http://a.com/%d", i)))
	}
	got, err := f.sched.Enqueue(ctx, parent, kids, nil)
	if err != nil {
		t.Fatal(err)
	}
	// As the original: the request that brings the count to the limit is
	// refused too, so domain_max_pages 3 queues 2 (the seed is the third page).
	if got.Queued != 2 || got.Refused[ledger.RefusedPageLimit] != 3 {
		t.Fatalf("domain_max_pages: %+v", got)
	}
	parent.DomainMaxPages = 0
	parent.CrawlID = "c2"
	var more []*crawlrequest.Request
	for i := range 6 {
		more = append(more, parent.Follow(fmt.Sprintf("http://a.com/c2/%d", i)))
	}
	if got, _ := f.sched.Enqueue(ctx, parent, more, nil); got.Queued != 3 || got.Refused[ledger.RefusedPageLimit] != 3 {
		t.Fatalf("global limit: %+v", got)
	}
}

func TestThrottleKeysFollowTheThrottleStyle(t *testing.T) {
	ipServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "your ip is 10.1.2.3\n")
	}))
	defer ipServer.Close()
	cfg := config()
	cfg.ByType, cfg.ByIP, cfg.PublicIPURL = true, true, ipServer.URL
	f := start(t, cfg)
	queueRequest(t, f.rdb, "http://a.com/", "c1", 1)
	next(t, f.sched, 5*time.Second)
	if f.sched.IP() != "10.1.2.3" {
		t.Fatalf("ip %q", f.sched.IP())
	}
	if n := f.rdb.Exists(context.Background(), "link:10.1.2.3:a.com:throttle_window").Val(); n != 1 {
		keys, _ := f.rdb.Keys(context.Background(), "*throttle*").Result()
		t.Fatalf("throttle keys %v", keys)
	}
}

// tryNext is Next with a short wait: nil when nothing comes within it.
func tryNext(s *scheduler.Scheduler, within time.Duration) *scheduler.Item {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	it, err := s.Next(ctx)
	if err != nil {
		return nil
	}
	return it
}

// startOneDomain starts a scheduler with CONCURRENT_REQUESTS concurrency
// and CONCURRENT_REQUESTS_PER_DOMAIN perDomain, n requests queued in
// a.com's queue (http://a.com/0 ...).
func startOneDomain(t *testing.T, concurrency, perDomain, n int) *fixture {
	t.Helper()
	cfg := config()
	cfg.Concurrency, cfg.PerDomain = concurrency, perDomain
	f := start(t, cfg)
	for i := range n {
		queueRequest(t, f.rdb, fmt.Sprintf("http://a.com/%d", i), "c1", 1)
	}
	return f
}

// fetchedAll ends the items' downloads (Fetched), in turn.
func fetchedAll(t *testing.T, s *scheduler.Scheduler, items ...*scheduler.Item) {
	t.Helper()
	for _, it := range items {
		if err := s.Fetched(context.Background(), it); err != nil {
			t.Fatal(err)
		}
	}
}

// doneAll acknowledges items, counting nothing.
func doneAll(t *testing.T, s *scheduler.Scheduler, items ...*scheduler.Item) {
	t.Helper()
	for _, it := range items {
		if err := s.Done(context.Background(), it, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAFetchedItemsSlotsGoToTheNextRequestsWhileItIsProcessed(t *testing.T) {
	f := startOneDomain(t, 4, 2, 10)
	ctx := context.Background()
	a := next(t, f.sched, 5*time.Second)
	// One pop took a and, leased, as many as CONCURRENT_REQUESTS ahead
	// (fewer than 3 × CONCURRENT_REQUESTS_PER_DOMAIN - 1).
	if n, _ := f.sched.Leases().Count(ctx); n != 5 || f.sched.InFlight() != 5 {
		t.Fatalf("%d leases, %d in flight after the first request, want 5: a and 4 popped ahead", n, f.sched.InFlight())
	}
	if n := f.rdb.ZCard(ctx, "link:a.com:queue").Val(); n != 5 {
		t.Fatalf("the queue holds %d requests, want 5", n)
	}
	b := next(t, f.sched, 5*time.Second)
	if it := tryNext(f.sched, 300*time.Millisecond); it != nil {
		t.Fatalf("a third request of a domain with CONCURRENT_REQUESTS_PER_DOMAIN 2 came while two were fetched: %s", it.Request.URL)
	}
	// a's fetch is over: its slot goes to the next request, a stays leased.
	if err := f.sched.Fetched(ctx, a); err != nil {
		t.Fatal(err)
	}
	c := next(t, f.sched, 5*time.Second)
	if held, err := f.rdb.HExists(ctx, "leases:link:items", a.LeaseID()).Result(); err != nil || !held {
		t.Fatalf("a is processed, its lease should be held: %v", err)
	}
	// Four fetched items are processed at most (CONCURRENT_REQUESTS):
	// the fifth's Fetched waits for one of them to be done.
	for _, it := range []*scheduler.Item{b, c} {
		if err := f.sched.Fetched(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	d := next(t, f.sched, 5*time.Second)
	if err := f.sched.Fetched(ctx, d); err != nil {
		t.Fatal(err)
	}
	e := next(t, f.sched, 5*time.Second)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := f.sched.Fetched(short, e); err == nil {
		t.Fatal("a fifth fetched item was processed beside four with CONCURRENT_REQUESTS 4")
	}
	aDone := make(chan error, 1)
	go func() { aDone <- f.sched.Done(ctx, a, nil) }()
	wait, cancelWait := context.WithTimeout(ctx, 5*time.Second)
	defer cancelWait()
	if err := f.sched.Fetched(wait, e); err != nil {
		t.Fatalf("the fifth fetched item still waits after one was done: %v", err)
	}
	doneAll(t, f.sched, b, c, d, e)
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	// What is leased still, if anything, was popped ahead and never handed
	// out: Release (a crawler's shutdown) returns it to the queue.
	held := f.sched.InFlight()
	if n, _ := f.sched.Leases().Count(ctx); n != int64(held) {
		t.Fatalf("%d leases, %d in flight after every handed-out item was done; want the same, the ones popped ahead", n, held)
	}
	if n, err := f.sched.Release(ctx); err != nil || n != held {
		t.Fatalf("released %d, %v; want %d", n, err, held)
	}
	if n := f.rdb.ZCard(ctx, "link:a.com:queue").Val(); n != 5 {
		t.Fatalf("the queue holds %d requests after the release, want the 5 not done", n)
	}
}

func TestALargePageQueuesEachNewLinkOnceAcrossItsDomains(t *testing.T) {
	f := start(t, config())
	ctx := context.Background()
	parent := &crawlrequest.Request{URL: "http://a.com/", AppID: "testapp", CrawlID: "big", SpiderID: "link", Priority: 1, MaxDepth: 2}
	// One member is in its queue already (its filter entry expired).
	queued := parent.Follow("http://b.com/7")
	member, err := queued.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f.rdb.ZAdd(ctx, "link:b.com:queue", redis.Z{Score: queued.Score(), Member: member})
	// 5,000 links over two domains, every one twice on the page, and the
	// page itself: more values than Lua's unpack takes at once.
	var kids []*crawlrequest.Request
	for i := range 5000 {
		host := []string{"a.com", "b.com"}[i%2]
		kids = append(kids, parent.Follow(fmt.Sprintf("http://%s/%d", host, i)))
	}
	kids = append(kids, kids...)
	kids = append(kids, parent.Follow("http://a.com/"))
	got, err := f.sched.Enqueue(ctx, parent, kids, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Queued != 4999 || got.Refused[ledger.RefusedDuplicate] != 5002 {
		t.Fatalf("enqueued %+v, want 4,999 queued and 5,002 duplicates", got)
	}
	if a, b := f.rdb.ZCard(ctx, "link:a.com:queue").Val(), f.rdb.ZCard(ctx, "link:b.com:queue").Val(); a != 2500 || b != 2500 {
		t.Fatalf("queues hold %d and %d requests, want 2,500 each", a, b)
	}
	if n := f.rdb.SCard(ctx, "link:dupefilter:big").Val(); n != 5001 {
		t.Fatalf("the duplicate filter holds %d fingerprints, want 5,001", n)
	}
	p := readLedger(t, f.rdb, "big")
	if p.Enqueued != 4999 || p.Refused[string(ledger.RefusedDuplicate)] != 5002 {
		t.Fatalf("ledger %+v", p)
	}
	// The same page again queues nothing.
	if got, err := f.sched.Enqueue(ctx, parent, kids[:5000], nil); err != nil || got.Queued != 0 || got.Refused[ledger.RefusedDuplicate] != 5000 {
		t.Fatalf("the page again: %+v, %v", got, err)
	}
}

func TestAFetchedItemWaitingToBeProcessedLeavesItsDomainsSlotToTheNextFetch(t *testing.T) {
	f := startOneDomain(t, 2, 1, 6)
	ctx := context.Background()
	// a and b are processed (CONCURRENT_REQUESTS 2: the most at once).
	var processed []*scheduler.Item
	for range 2 {
		it := next(t, f.sched, 5*time.Second)
		if err := f.sched.Fetched(ctx, it); err != nil {
			t.Fatal(err)
		}
		processed = append(processed, it)
	}
	c := next(t, f.sched, 5*time.Second)
	cWaits, cancel := context.WithCancel(ctx)
	defer cancel()
	cProcessed := make(chan error, 1)
	go func() { cProcessed <- f.sched.Fetched(cWaits, c) }()
	// c's download is over, so the domain (CONCURRENT_REQUESTS_PER_DOMAIN
	// 1) has its next fetch while c waits for a processing slot, holding
	// its request slot.
	d := next(t, f.sched, 5*time.Second)
	select {
	case err := <-cProcessed:
		t.Fatalf("c was processed beside two others with CONCURRENT_REQUESTS 2: %v", err)
	default:
	}
	if it := tryNext(f.sched, 300*time.Millisecond); it != nil {
		t.Fatalf("a third request was fetched while c and d held the 2 request slots: %s", it.Request.URL)
	}
	if err := f.sched.Done(ctx, processed[0], nil); err != nil {
		t.Fatal(err)
	}
	if err := <-cProcessed; err != nil {
		t.Fatalf("c still waits after a processed item was done: %v", err)
	}
	doneAll(t, f.sched, processed[1], c, d)
}

// TestAProcessedItemsSlotGoesToTheNextFetchedItemWhileItWaitsForKafka:
// Processed (a page's results encoded and handed to the producer) gives
// the item's processing slot to the next fetched item at once, and only
// once: its Done later gives back nothing more.
func TestAProcessedItemsSlotGoesToTheNextFetchedItemWhileItWaitsForKafka(t *testing.T) {
	f := startOneDomain(t, 2, 1, 6)
	ctx := context.Background()
	if got := f.sched.MostInHand(); got != 6 {
		t.Fatalf("MostInHand %d with CONCURRENT_REQUESTS 2, want 6: fetched, processed, waiting for Kafka", got)
	}
	// a and b are processed (CONCURRENT_REQUESTS 2: the most at once).
	a := next(t, f.sched, 5*time.Second)
	fetchedAll(t, f.sched, a)
	b := next(t, f.sched, 5*time.Second)
	fetchedAll(t, f.sched, b)
	c := next(t, f.sched, 5*time.Second)
	cWaits, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cProcessed := make(chan error, 1)
	go func() { cProcessed <- f.sched.Fetched(cWaits, c) }()
	// a's results are with the producer: c takes its processing slot
	// while a, still leased, waits for Kafka.
	f.sched.Processed(a)
	if err := <-cProcessed; err != nil {
		t.Fatalf("c still waits for a processing slot after a was processed: %v", err)
	}
	if held, err := f.rdb.HExists(ctx, "leases:link:items", a.LeaseID()).Result(); err != nil || !held {
		t.Fatalf("a waits for Kafka, its lease should be held: %v", err)
	}
	// a's slot went once: again, or its Done, gives back nothing more, so
	// b and c are still the two processed and d waits.
	f.sched.Processed(a)
	if err := f.sched.Done(ctx, a, nil); err != nil {
		t.Fatal(err)
	}
	d := next(t, f.sched, 5*time.Second)
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if err := f.sched.Fetched(short, d); err == nil {
		t.Fatal("a third fetched item was processed beside b and c with CONCURRENT_REQUESTS 2: a's slot was given back twice")
	}
	doneAll(t, f.sched, b)
	fetchedAll(t, f.sched, d)
	doneAll(t, f.sched, c, d)
}

func TestAnItemsSlotsGoToTheNextRequestsWhileItsAcknowledgementWaitsForRedis(t *testing.T) {
	f := startOneDomain(t, 2, 1, 6)
	ctx := context.Background()
	// One pop takes a and, ahead, b and c.
	a := next(t, f.sched, 5*time.Second)
	if err := f.sched.Fetched(ctx, a); err != nil {
		t.Fatal(err)
	}
	b := next(t, f.sched, 5*time.Second)
	if it := tryNext(f.sched, 300*time.Millisecond); it != nil {
		t.Fatalf("a second fetch of a domain with CONCURRENT_REQUESTS_PER_DOMAIN 1: %s", it.Request.URL)
	}
	// Redis holds every write (the acknowledgements' included) until
	// unpaused.
	if err := f.rdb.Do(ctx, "CLIENT", "PAUSE", "30000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	unpause := func() { f.rdb.Do(ctx, "CLIENT", "UNPAUSE") }
	defer unpause()
	acked := make(chan error, 2)
	// a is processed; b ends before its fetch did (as a request of an
	// expired crawl).
	for _, it := range []*scheduler.Item{a, b} {
		go func() { acked <- f.sched.Done(ctx, it, nil) }()
	}
	// b's request slot and its domain's, and a's processing slot, go at
	// once: c, popped ahead, is fetched and processed while a's and b's
	// acknowledgements wait for Redis.
	c := next(t, f.sched, 5*time.Second)
	processing, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := f.sched.Fetched(processing, c); err != nil {
		t.Fatalf("c waits for a processing slot while a's acknowledgement waits: %v", err)
	}
	select {
	case err := <-acked:
		t.Fatalf("an acknowledgement was answered while Redis held writes: %v", err)
	default:
	}
	unpause()
	for range 2 {
		if err := <-acked; err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range []*scheduler.Item{a, b} {
		if held, err := f.rdb.HExists(ctx, "leases:link:items", it.LeaseID()).Result(); err != nil || held {
			t.Fatalf("%s's lease is held after its acknowledgement (%v)", it.Request.URL, err)
		}
	}
	doneAll(t, f.sched, c)
}

// FinishThen returns at once, while Redis holds the acknowledgement, and
// its completion is told the answer once, after the lease ended and the
// item left the requests in flight.
func TestFinishThenReturnsAtOnceAndIsToldOnceTheLeaseEnded(t *testing.T) {
	f := startOneDomain(t, 2, 2, 2)
	ctx := context.Background()
	a := next(t, f.sched, 5*time.Second)
	fetchedAll(t, f.sched, a)
	if err := f.rdb.Do(ctx, "CLIENT", "PAUSE", "30000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	unpause := func() { f.rdb.Do(ctx, "CLIENT", "UNPAUSE") }
	defer unpause()
	type answer struct {
		err      error
		inFlight int
	}
	told := make(chan answer, 2)
	f.sched.FinishThen(ctx, a, nil, nil, nil, func(_ scheduler.Enqueued, err error) {
		told <- answer{err: err, inFlight: f.sched.InFlight()}
	})
	// Returned with Redis holding writes: nothing is told yet.
	select {
	case got := <-told:
		t.Fatalf("told %+v while Redis held the acknowledgement", got)
	case <-time.After(200 * time.Millisecond):
	}
	unpause()
	var got answer
	select {
	case got = <-told:
	case <-time.After(10 * time.Second):
		t.Fatal("never told the acknowledgement's answer")
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	// b, popped ahead with a, is still leased: only a left.
	if got.inFlight != 1 {
		t.Fatalf("%d requests in flight when told, want 1 (a's time in flight ended first)", got.inFlight)
	}
	if held, err := f.rdb.HExists(ctx, "leases:link:items", a.LeaseID()).Result(); err != nil || held {
		t.Fatalf("a's lease is held after its acknowledgement (%v)", err)
	}
	select {
	case again := <-told:
		t.Fatalf("told twice: %+v", again)
	case <-time.After(100 * time.Millisecond):
	}
}
