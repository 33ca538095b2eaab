package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// finishing acknowledges items in goroutines (each published, counted),
// and tells done about each one answered.
func finishing(t *testing.T, s *scheduler.Scheduler, wg *sync.WaitGroup, done chan<- string, items ...*scheduler.Item) {
	t.Helper()
	for _, it := range items {
		wg.Go(func() {
			tally := &ledger.Tally{}
			tally.Fetched(it.Crawl(), 200)
			tally.Published(it.Crawl(), false)
			if _, err := s.Finish(context.Background(), it, tally, nil, nil); err != nil {
				t.Errorf("finish %s: %v", it.Request.URL, err)
			}
			done <- it.Request.URL
		})
	}
}

// leased is how many requests domain's lease set holds.
func leased(t *testing.T, c *redis.ClusterClient, domain string) int64 {
	t.Helper()
	n, err := c.HLen(context.Background(), rediskeys.Cluster.Leases("link", domain)+":items").Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// answered says whether any of done's acknowledgements was answered
// within d (a wait that can only hide an early answer, never invent one).
func answered(done <-chan string, d time.Duration) (string, bool) {
	select {
	case url := <-done:
		return url, true
	case <-time.After(d):
		return "", false
	}
}

// On a Redis Cluster with SCHEDULER_CLUSTER_ACK_LINGER_MS, a domain's
// acknowledgements wait for each other: with a linger far longer than the
// test, ClusterAckSet - 1 of them stay unanswered, their leases held, and
// the ClusterAckSet-th sends them all; the ledger then counts each once.
func TestClusterAcknowledgementsOfADomainWaitForEachOther(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	cfg := clusterConfig()
	cfg.ClusterAckLinger = time.Hour
	cfg.Concurrency, cfg.PerDomain = 2*scheduler.ClusterAckSet, 2*scheduler.ClusterAckSet
	s, c, _ := runOnCluster(t, rc, cfg)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer s.HurryAcks() // before the wait: on a failure, those waiting go
	var urls []string
	for i := range scheduler.ClusterAckSet {
		urls = append(urls, fmt.Sprintf("http://one.com/%d", i))
	}
	seedOnCluster(t, c, urls)
	var items []*scheduler.Item
	for range urls {
		items = append(items, next(t, s, 20*time.Second))
	}
	done := make(chan string, len(items))
	finishing(t, s, &wg, done, items[:len(items)-1]...)
	if url, ok := answered(done, 500*time.Millisecond); ok {
		t.Fatalf("the acknowledgement of %s was answered with %d of its domain's waiting, under %d", url, len(items)-1, scheduler.ClusterAckSet)
	}
	if n := leased(t, c, "one.com"); n != int64(len(items)) {
		t.Fatalf("one.com's lease set holds %d requests while their acknowledgements wait, want %d", n, len(items))
	}
	finishing(t, s, &wg, done, items[len(items)-1])
	harness.WaitFor(t, "every acknowledgement answered", 30*time.Second, func() bool { return len(done) == len(items) })
	if n := leased(t, c, "one.com"); n != 0 {
		t.Errorf("one.com's lease set holds %d requests after their acknowledgements, want 0", n)
	}
	p, _, err := ledger.ReadSum(context.Background(), c, clusterCrawl, []string{"one.com"})
	if err != nil || p.Published != int64(len(items)) || p.Outstanding() != 0 {
		t.Errorf("ledger %+v, %v: want %d published, nothing outstanding", p, err, len(items))
	}
}

// A lone acknowledgement goes once it has waited the linger; on a stop
// (HurryAcks) those waiting go at once, and every later one without the
// wait.
func TestClusterAcknowledgementsWaitTheLingerOrGoWhenTheCrawlerStops(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	cfg := clusterConfig()
	cfg.ClusterAckLinger = 200 * time.Millisecond
	short, c, _ := runOnCluster(t, rc, cfg)
	seedOnCluster(t, c, []string{"http://one.com/", "http://two.com/", "http://three.com/"})
	done := make(chan string, 3)
	var wg sync.WaitGroup
	defer wg.Wait()
	finishing(t, short, &wg, done, next(t, short, 20*time.Second))
	harness.WaitFor(t, "a lone acknowledgement answered after the linger", 30*time.Second, func() bool { return len(done) == 1 })
	<-done
	if _, err := short.Release(context.Background()); err != nil {
		t.Fatal(err)
	}

	cfg.ClusterAckLinger = time.Hour
	long, _, _ := runOnCluster(t, rc, cfg)
	defer long.HurryAcks() // before the wait: on a failure, those waiting go
	it := next(t, long, 20*time.Second)
	finishing(t, long, &wg, done, it)
	if url, ok := answered(done, 500*time.Millisecond); ok {
		t.Fatalf("the acknowledgement of %s was answered before its linger of an hour or a stop", url)
	}
	if n := leased(t, c, it.Domain); n != 1 {
		t.Fatalf("%s's lease set holds %d requests while its acknowledgement waits, want 1", it.Domain, n)
	}
	long.HurryAcks()
	harness.WaitFor(t, "the waiting acknowledgement answered once the crawler stops", 30*time.Second, func() bool { return len(done) == 1 })
	<-done
	finishing(t, long, &wg, done, next(t, long, 20*time.Second))
	harness.WaitFor(t, "an acknowledgement after the stop answered", 30*time.Second, func() bool { return len(done) == 1 })
	for _, d := range []string{"one.com", "two.com", "three.com"} {
		if n := leased(t, c, d); n != 0 {
			t.Errorf("%s's lease set holds %d requests, want 0", d, n)
		}
	}
}

// A crawler killed (its lease renewals stopped) while its acknowledgements
// wait for their domains loses no page: the leases, never ended, expire,
// and another crawler crawls the requests again.
func TestClusterCrawlerKilledWithAcknowledgementsWaitingLosesNoPage(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	cfg := clusterConfig()
	cfg.LeaseTTL, cfg.ReapInterval = time.Second, 200*time.Millisecond
	cfg.ClusterAckLinger = time.Hour
	dead, c, kill := runOnCluster(t, rc, cfg)
	urls := []string{"http://one.com/", "http://two.com/", "http://three.com/"}
	seedOnCluster(t, c, urls)
	done := make(chan string, len(urls))
	var wg sync.WaitGroup
	defer wg.Wait()
	// Before the wait: the dead crawler's acknowledgements end with the
	// test (their leases lost).
	defer dead.HurryAcks()
	for range urls {
		finishing(t, dead, &wg, done, next(t, dead, 20*time.Second))
	}
	if url, ok := answered(done, 300*time.Millisecond); ok {
		t.Fatalf("the acknowledgement of %s was answered before its linger of an hour", url)
	}
	kill()

	cfg.ClusterAckLinger = 0
	survivorCrawls(t, rc, cfg, urls)
}
