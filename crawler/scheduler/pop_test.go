package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// waitDomains waits until s knows n domain queues.
func waitDomains(t *testing.T, s *scheduler.Scheduler, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.Domains() != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the scheduler knows %d domain queues, want %d", s.Domains(), n)
		}
	}
}

// Domains due at once are popped together: the first Next pops from
// every one of them (one pipeline), and the next calls hand their items
// out without Redis, in the order the domains were due, each domain in
// its turn as before (a round of the four, then again), FIFO within each.
// A blacklisted domain due with them is not popped.
func TestTheDomainsDueTogetherArePoppedTogetherAndServedDueFirst(t *testing.T) {
	f := start(t, config())
	domains := []string{"a.com", "b.com", "c.com", "d.com"}
	f.sched.SetDomainConfig(domainconfig.Document{Blacklist: []string{"e.com"}})
	for i, d := range domains {
		for n := range 3 {
			queueRequest(t, f.rdb, fmt.Sprintf("http://%s/%d", d, n), "c1", 1)
		}
		waitDomains(t, f.sched, i+1) // due in this order
	}
	queueRequest(t, f.rdb, "http://e.com/0", "c1", 1)
	waitDomains(t, f.sched, 5)
	first := next(t, f.sched, 5*time.Second)
	if st := f.sched.Stats(); st.Popped != 12 || f.sched.InFlight() != 12 {
		t.Fatalf("the first Next popped %d (%d leased), want the 12 of the four domains due", st.Popped, f.sched.InFlight())
	}
	ctx := context.Background()
	for _, d := range domains {
		if n := f.rdb.ZCard(ctx, "link:"+d+":queue").Val(); n != 0 {
			t.Fatalf("%s still holds %d requests", d, n)
		}
	}
	if n := f.rdb.ZCard(ctx, "link:e.com:queue").Val(); n != 1 {
		t.Fatalf("the blacklisted e.com holds %d requests, want its 1", n)
	}
	got := []string{first.Request.URL}
	doneAll(t, f.sched, first)
	for range 11 {
		it := next(t, f.sched, 5*time.Second)
		got = append(got, it.Request.URL)
		doneAll(t, f.sched, it)
	}
	var want []string
	for n := range 3 {
		for _, d := range domains {
			want = append(want, fmt.Sprintf("http://%s/%d", d, n))
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("served\n%v\nwant\n%v", got, want)
	}
	if st := f.sched.Stats(); st.Popped != 12 {
		t.Fatalf("popped %d after handing out 12, want 12: the hand-outs went to Redis", st.Popped)
	}
}

// The domains popped together share the items the first would pop alone
// (the one handed out and CONCURRENT_REQUESTS ahead), dealt in turn: with
// CONCURRENT_REQUESTS 4, five items over the four domains due, the first
// domain two, the others one each.
func TestTheDomainsPoppedTogetherShareConcurrentRequestsAhead(t *testing.T) {
	cfg := config()
	cfg.Concurrency, cfg.PerDomain = 4, 2
	f := start(t, cfg)
	domains := []string{"a.com", "b.com", "c.com", "d.com"}
	for i, d := range domains {
		for n := range 5 {
			queueRequest(t, f.rdb, fmt.Sprintf("http://%s/%d", d, n), "c1", 1)
		}
		waitDomains(t, f.sched, i+1)
	}
	it := next(t, f.sched, 5*time.Second)
	if it.Domain != "a.com" {
		t.Fatalf("served %s first, want a.com (due first)", it.Domain)
	}
	if st := f.sched.Stats(); st.Popped != 5 {
		t.Fatalf("popped %d, want 5 (1 + CONCURRENT_REQUESTS)", st.Popped)
	}
	for i, d := range domains {
		want := int64(4)
		if i == 0 {
			want = 3
		}
		if n := f.rdb.ZCard(context.Background(), "link:"+d+":queue").Val(); n != want {
			t.Fatalf("%s holds %d requests, want %d", d, n, want)
		}
	}
}

// On a Redis Cluster the domains due together are popped together too,
// whichever masters hold them (one round trip per master): twenty domains
// of one request each, the first Next pops 17 of them (the one handed out
// and CONCURRENT_REQUESTS 16 ahead); every request is served once.
func TestClusterTheDomainsDueTogetherArePoppedTogether(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	cfg := clusterConfig()
	c := rc.TestClient(t)
	var urls []string
	for i := range 20 {
		urls = append(urls, fmt.Sprintf("http://d%d.com/", i))
	}
	seedOnCluster(t, c, urls)
	s, _ := startScheduler(t, c, cfg)
	waitDomains(t, s, 20)
	seen := map[string]bool{}
	for i := range urls {
		it := next(t, s, 10*time.Second)
		if i == 0 {
			if st := s.Stats(); st.Popped != 17 {
				t.Fatalf("the first Next popped %d, want 17", st.Popped)
			}
		}
		if seen[it.Request.URL] {
			t.Fatalf("%s served twice", it.Request.URL)
		}
		seen[it.Request.URL] = true
		doneAll(t, s, it)
	}
	if st := s.Stats(); st.Popped != 20 {
		t.Fatalf("popped %d, want 20", st.Popped)
	}
}

// lockedBuffer is a log output read while the scheduler writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A domain whose pop fails beside others popped with it is logged with
// its queue and tried again after a back-off; the others are served, and
// the failed domain is once its queue works again.
func TestAFailedPopAmongOthersIsLoggedWithItsQueueAndTriedAgain(t *testing.T) {
	if err := redisServer.FlushAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	rdb := redisServer.TestClient(t)
	var out lockedBuffer
	lc := logfactory.DefaultConfig()
	lc.Level, lc.Output, lc.JSON = "ERROR", &out, true
	log, err := logfactory.New(lc)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startLogging(t, rdb, config(), log)
	ctx := context.Background()
	// b.com's queue is not a sorted set: its pops fail (WRONGTYPE).
	if err := rdb.Set(ctx, "link:b.com:queue", "not a queue", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.Publish(ctx, "link:queue-announce", "link:b.com:queue")
	waitDomains(t, s, 1)
	queueRequest(t, rdb, "http://a.com/0", "c1", 1)
	queueRequest(t, rdb, "http://a.com/1", "c1", 1)
	waitDomains(t, s, 2)
	for range 2 {
		it := next(t, s, 5*time.Second)
		if it.Domain != "a.com" {
			t.Fatalf("served %s", it.Request.URL)
		}
		doneAll(t, s, it)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), `"queue": "link:b.com:queue"`); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line of b.com's failed pop; logged:\n%s", out.String())
		}
	}
	if !strings.Contains(out.String(), "Failed to pop from Redis") || strings.Contains(out.String(), "link:a.com:queue") {
		t.Fatalf("logged:\n%s", out.String())
	}
	if err := rdb.Del(ctx, "link:b.com:queue").Err(); err != nil {
		t.Fatal(err)
	}
	queueRequest(t, rdb, "http://b.com/0", "c1", 1)
	if it := next(t, s, 10*time.Second); it.Request.URL != "http://b.com/0" {
		t.Fatalf("served %s after b.com's queue was mended", it.Request.URL)
	}
}
