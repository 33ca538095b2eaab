package throttle_test

import (
	"context"
	"math"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

func newLeases(t *testing.T, ttl time.Duration) (*throttle.Leases, *redis.Client) {
	t.Helper()
	c := client(t)
	l, err := throttle.NewLeases(c, "leases:link", ttl)
	if err != nil {
		t.Fatal(err)
	}
	return l, c
}

// leasedQueue is link:a.com:queue holding n items, a throttle of it
// allowing limit pops a minute, and leases of ttl.
func leasedQueue(t *testing.T, ttl time.Duration, limit, n int) (*throttle.Leases, *redis.Client, *throttle.Queue[string]) {
	t.Helper()
	l, c := newLeases(t, ttl)
	tq := newThrottle(t, "link:a.com:queue", throttle.Config{Window: time.Minute, Limit: limit})
	fill(t, "link:a.com:queue", n)
	return l, c, tq
}

func TestAttemptRecordsTheLeaseWithThePop(t *testing.T) {
	ctx := context.Background()
	l, c, tq := leasedQueue(t, 30*time.Second, 10, 2)
	lease := l.New()
	res, err := tq.Attempt(ctx, lease)
	if err != nil || res.Status != throttle.Popped || res.Raw != `"item-1"` || res.Score != -1 {
		t.Fatalf("attempt %+v, %v", res, err)
	}
	owners, hash := l.Keys()
	if owners != "leases:link:owners" || hash != "leases:link:items" {
		t.Fatalf("keys %s, %s", owners, hash)
	}
	if !strings.HasPrefix(lease.ID, l.Owner()+":") {
		t.Fatalf("lease id %s is not one of the owner %s", lease.ID, l.Owner())
	}
	deadline := c.ZScore(ctx, owners, l.Owner()).Val()
	if now := float64(time.Now().Unix()); deadline < now+29 || deadline > now+32 || deadline != math.Trunc(deadline) {
		t.Fatalf("owner deadline %v, want now+30 in whole seconds, rounded up", deadline)
	}
	stored := c.HGet(ctx, hash, lease.ID).Val()
	if want := "16:link:a.com:queue-1\n\"item-1\""; stored != want {
		t.Fatalf("lease record %q, want %q", stored, want)
	}
	if rec, ok := throttle.ParseRecord(stored); !ok || rec != (throttle.Record{Queue: "link:a.com:queue", Score: "-1", Member: `"item-1"`}) {
		t.Fatalf("lease record %q read as %+v, %v", stored, rec, ok)
	}
	if err := l.Ack(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	if n, _ := l.Count(ctx); n != 0 || c.HLen(ctx, hash).Val() != 0 {
		t.Fatal("ack left the lease")
	}
	// Without a lease nothing is recorded.
	if res, err := tq.Attempt(ctx, nil); err != nil || res.Status != throttle.Popped {
		t.Fatalf("attempt %+v, %v", res, err)
	}
	if n, _ := l.Count(ctx); n != 0 {
		t.Fatal("lease recorded without one")
	}
}

func TestReapReturnsExpiredLeasesWithTheirScore(t *testing.T) {
	ctx := context.Background()
	l, c, tq := leasedQueue(t, time.Second, 10, 3)
	var held []string
	for range 3 {
		lease := l.New()
		if res, err := tq.Attempt(ctx, lease); err != nil || res.Status != throttle.Popped {
			t.Fatalf("attempt %+v, %v", res, err)
		}
		held = append(held, lease.ID)
	}
	// The holder "dies": nothing is renewed. Before the deadline nothing is reaped.
	if n, err := l.Reap(ctx, 100); err != nil || n != 0 {
		t.Fatalf("reaped %d, %v before the deadline", n, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	restored := 0
	for restored < 3 && time.Now().Before(deadline) {
		n, err := l.Reap(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		restored += n
		time.Sleep(50 * time.Millisecond)
	}
	if restored != 3 {
		t.Fatalf("restored %d of 3", restored)
	}
	got := c.ZRangeWithScores(ctx, "link:a.com:queue", 0, -1).Val()
	if len(got) != 3 || got[0].Member != `"item-2"` || got[0].Score != -2 || got[2].Score != 0 {
		t.Fatalf("queue after reaping %v", got)
	}
	if n, _ := l.Count(ctx); n != 0 {
		t.Fatal("reaped leases left")
	}
	_ = held
}

func TestRenewKeepsLeasesAlive(t *testing.T) {
	ctx := context.Background()
	l, c, tq := leasedQueue(t, time.Second, 10, 1)
	lease := l.New()
	if _, err := tq.Attempt(ctx, lease); err != nil {
		t.Fatal(err)
	}
	for range 10 { // 2.5 s, past the TTL and its rounding up
		time.Sleep(250 * time.Millisecond)
		if held, err := l.Renew(ctx); err != nil || !held {
			t.Fatalf("renew: held %v, %v", held, err)
		}
		if n, _ := l.Reap(ctx, 100); n != 0 {
			t.Fatal("a renewed lease was reaped")
		}
	}
	if c.ZCard(ctx, "link:a.com:queue").Val() != 0 {
		t.Fatal("item back in the queue while leased")
	}
	// An owner reaped meanwhile is reported, and the leases made after go
	// to a new owner.
	owner := l.Owner()
	owners, _ := l.Keys()
	c.ZAdd(ctx, owners, redis.Z{Score: 1, Member: owner}) // its deadline long past
	if n, err := l.Reap(ctx, 100); err != nil || n != 1 {
		t.Fatalf("reaped %d, %v", n, err)
	}
	if held, err := l.Renew(ctx); err != nil || held {
		t.Fatalf("renew of a reaped owner: held %v, %v", held, err)
	}
	if l.Owner() == owner || strings.HasPrefix(l.New().ID, owner+":") {
		t.Fatal("the leases after a reap are still the reaped owner's")
	}
	if lost, err := l.AckWith(ctx, nil, lease.ID); err != nil || len(lost) != 1 {
		t.Fatalf("ack of a reaped lease: lost %v, %v", lost, err)
	}
}

func TestRequeueAndRelease(t *testing.T) {
	ctx := context.Background()
	l, c, tq := leasedQueue(t, 30*time.Second, 10, 2)
	a, b := l.New(), l.New()
	_, _ = tq.Attempt(ctx, a)
	_, _ = tq.Attempt(ctx, b)
	if err := l.Requeue(ctx, a.ID, "link:a.com:queue", `"item-1 retry 1"`, 2); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Release(ctx, b.ID, "unknown-id"); err != nil || n != 1 {
		t.Fatalf("released %d, %v", n, err)
	}
	got := c.ZRangeWithScores(ctx, "link:a.com:queue", 0, -1).Val()
	if len(got) != 2 || got[0].Member != `"item-0"` || got[1].Member != `"item-1 retry 1"` || math.Floor(got[1].Score) != 2 {
		t.Fatalf("queue %v", got)
	}
	if n, _ := l.Count(ctx); n != 0 {
		t.Fatal("leases left")
	}
}

func TestAReapedLeaseIsReportedByAckAndNotRequeued(t *testing.T) {
	ctx := context.Background()
	l, c, tq := leasedQueue(t, time.Second, 10, 3)
	a, b, held := l.New(), l.New(), l.New()
	for _, lease := range []*throttle.Lease{a, b} {
		if _, err := tq.Attempt(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); c.ZCard(ctx, "link:a.com:queue").Val() != 3; {
		if time.Now().After(deadline) {
			t.Fatal("the leases were not reaped")
		}
		time.Sleep(50 * time.Millisecond)
		if _, err := l.Reap(ctx, 100); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tq.Attempt(ctx, held); err != nil {
		t.Fatal(err)
	}
	// The ack of a reaped and a held lease: both end, the reaped one is
	// reported, and what also writes happens in the same step.
	lost, err := l.AckWith(ctx, func(p redis.Pipeliner) { p.Incr(ctx, "acked") }, a.ID, held.ID)
	if err != nil || len(lost) != 1 || lost[0] != a.ID {
		t.Fatalf("ack: lost %v, %v; want [%s]", lost, err, a.ID)
	}
	if c.Get(ctx, "acked").Val() != "1" {
		t.Fatal("also did not run")
	}
	// A retry of a reaped lease does not queue the item a second time.
	ok, err := l.RequeueWith(ctx, func(p redis.Pipeliner) { p.Incr(ctx, "retried") }, b.ID, "link:a.com:queue", `"item-x retry 1"`, 5)
	if err != nil || ok {
		t.Fatalf("requeue of a reaped lease: held %v, %v", ok, err)
	}
	if c.ZScore(ctx, "link:a.com:queue", `"item-x retry 1"`).Err() == nil {
		t.Fatal("the retry of a reaped lease was queued beside its original")
	}
	if n, _ := l.Count(ctx); n != 0 || c.HLen(ctx, "leases:link:items").Val() != 0 {
		t.Fatalf("%d leases left", n)
	}
}

func TestConcurrentReapersRestoreEachItemOnce(t *testing.T) {
	ctx := context.Background()
	l, c, tq := leasedQueue(t, time.Second, 1000, 200)
	for range 200 {
		if _, err := tq.Attempt(ctx, l.New()); err != nil {
			t.Fatal(err)
		}
	}
	// Let every lease expire: a deadline is whole seconds, rounded up.
	time.Sleep(2100 * time.Millisecond)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := throttle.NewLeases(server.Client(), "leases:link", time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			for {
				n, err := r.Reap(ctx, 7)
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
				mu.Lock()
				total += n
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if total != 200 || c.ZCard(ctx, "link:a.com:queue").Val() != 200 {
		t.Fatalf("restored %d, queue holds %d; want 200 each", total, c.ZCard(ctx, "link:a.com:queue").Val())
	}
}

func TestDenialsSayHowLongToWait(t *testing.T) {
	ctx := context.Background()
	tq := newThrottle(t, "link:a.com:queue", throttle.Config{Window: 10 * time.Second, Limit: 2})
	fill(t, "link:a.com:queue", 5)
	for range 2 {
		if res, _ := tq.Attempt(ctx, nil); res.Status != throttle.Popped {
			t.Fatal("not popped")
		}
	}
	res, err := tq.Attempt(ctx, nil)
	if err != nil || res.Status != throttle.DeniedByWindow || res.Wait < 9*time.Second || res.Wait > 10*time.Second {
		t.Fatalf("window denial %+v, %v; want a wait of about 10s", res, err)
	}
	mod := newThrottle(t, "link:b.com:queue", throttle.Config{Window: 10 * time.Second, Limit: 5, Moderate: true})
	fill(t, "link:b.com:queue", 5)
	_, _ = mod.Attempt(ctx, nil)
	res, err = mod.Attempt(ctx, nil)
	if err != nil || res.Status != throttle.DeniedByModeration || res.Wait < 1500*time.Millisecond || res.Wait > 2*time.Second {
		t.Fatalf("moderation denial %+v, %v; want a wait of about 2s", res, err)
	}
}

func TestAttemptNPopsWhatTheWindowAllowsAndLeasesEach(t *testing.T) {
	ctx := context.Background()
	l, c, tq := leasedQueue(t, 30*time.Second, 5, 10)
	lease := l.New()
	res, err := tq.AttemptN(ctx, lease, 8)
	if err != nil || res.Status != throttle.Popped || len(res.More) != 4 {
		t.Fatalf("AttemptN = %+v, %v; want 5 items (the window's limit)", res, err)
	}
	if res.Raw != `"item-9"` || res.More[0].Raw != `"item-8"` || res.More[3].LeaseID != lease.ID+":5" || res.More[3].Score != -5 {
		t.Fatalf("items %+v", res)
	}
	if n, _ := l.Count(ctx); n != 5 {
		t.Fatalf("%d leases, want 5", n)
	}
	if n := c.ZCard(ctx, tq.WindowKey()).Val(); n != 5 {
		t.Fatalf("%d hits, want 5", n)
	}
	if res, _ := tq.AttemptN(ctx, l.New(), 8); res.Status != throttle.DeniedByWindow {
		t.Fatalf("after the limit: %v", res.Status)
	}
	ids := []string{lease.ID}
	for _, m := range res.More {
		ids = append(ids, m.LeaseID)
	}
	if err := l.Ack(ctx, ids...); err != nil {
		t.Fatal(err)
	}
	if n, _ := l.Count(ctx); n != 0 {
		t.Fatalf("%d leases left after acking every id", n)
	}
	// A moderated throttle pops one at a time.
	mod := newThrottle(t, "link:b.com:queue", throttle.Config{Window: time.Minute, Limit: 5, Moderate: true})
	fill(t, "link:b.com:queue", 5)
	if res, _ := mod.AttemptN(ctx, nil, 8); res.Status != throttle.Popped || len(res.More) != 0 {
		t.Fatalf("moderated AttemptN popped %d more", len(res.More))
	}
}

// The leases' keys stay out of the patterns the original's components scan,
// whatever the spider's name (a Python component in the same cluster must
// not take them for its own).
func TestNoLeaseKeyMatchesAPatternTheOriginalScans(t *testing.T) {
	patterns := []string{"*:*:queue", "*:queue", "info:*", "stop:*", "expire:*", "statsrequest:*", "zk:*", "stats:*",
		"timeout:*", "*:dupefilter:*", "*:blacklist", "*:*:throttle_*", "lock:*"}
	for _, spider := range []string{"link", "queue", "blacklist", "stats", "info", "app"} {
		l, err := throttle.NewLeases(nil, rediskeys.LeaseKey(spider), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		owners, records := l.Keys()
		for _, k := range []string{owners, records} {
			for _, p := range patterns {
				if ok, _ := path.Match(p, k); ok {
					t.Errorf("key %q matches %q", k, p)
				}
			}
		}
	}
}

// A leased pop sent again under the same lease (its answer was lost with
// its connection, in a Redis restart say, and go-redis or the popper sent
// it again) answers what the first run popped: nothing it popped is lost
// (its lease record overwritten by the next item's) or left leased to
// nobody, and no second hit is counted. A moderated throttle answers it
// even within the moderation gap.
func TestAPopSentAgainAnswersWhatTheFirstRunPopped(t *testing.T) {
	ctx := context.Background()
	l, c, tq := leasedQueue(t, 30*time.Second, 5, 10)
	lease := l.New()
	first, err := tq.AttemptN(ctx, lease, 3)
	if err != nil || first.Status != throttle.Popped || len(first.More) != 2 {
		t.Fatalf("AttemptN = %+v, %v", first, err)
	}
	again, err := tq.AttemptN(ctx, lease, 3)
	if err != nil || again.Status != throttle.Popped || again.Raw != first.Raw || again.Score != first.Score ||
		len(again.More) != 2 || again.More[0] != first.More[0] || again.More[1] != first.More[1] {
		t.Fatalf("sent again: %+v, %v; want %+v", again, err, first)
	}
	if n, _ := l.Count(ctx); n != 3 {
		t.Fatalf("%d leases, want 3", n)
	}
	if n := c.ZCard(ctx, tq.WindowKey()).Val(); n != 3 {
		t.Fatalf("%d hits, want 3", n)
	}
	if n := c.ZCard(ctx, "link:a.com:queue").Val(); n != 7 {
		t.Fatalf("%d items queued, want 7", n)
	}
	// A new lease pops the next items.
	if next, err := tq.AttemptN(ctx, l.New(), 1); err != nil || next.Raw != `"item-6"` {
		t.Fatalf("next pop %+v, %v", next, err)
	}

	mod := newThrottle(t, "link:b.com:queue", throttle.Config{Window: time.Minute, Limit: 5, Moderate: true})
	fill(t, "link:b.com:queue", 5)
	lease = l.New()
	first, err = mod.Attempt(ctx, lease)
	if err != nil || first.Status != throttle.Popped {
		t.Fatalf("moderated Attempt = %+v, %v", first, err)
	}
	again, err = mod.Attempt(ctx, lease)
	if err != nil || again.Status != throttle.Popped || again.Raw != first.Raw {
		t.Fatalf("moderated, sent again: %+v, %v; want %+v", again, err, first)
	}
	if n := c.ZCard(ctx, "link:b.com:queue").Val(); n != 4 {
		t.Fatalf("%d items queued, want 4", n)
	}
	if res, _ := mod.Attempt(ctx, l.New()); res.Status != throttle.DeniedByModeration {
		t.Fatalf("a new pop within the moderation gap: %v", res.Status)
	}
}
