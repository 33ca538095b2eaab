package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisqueue"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

var server harness.SharedRedis

func TestMain(m *testing.M) { server.Main(m) }

// flushed records the tests that already emptied the shared server, so
// each test starts from an empty Redis even when run with -count.
var flushed sync.Map

func client(tb testing.TB) *redis.Client {
	tb.Helper()
	c := server.TestClient(tb)
	if _, done := flushed.LoadOrStore(tb, true); !done {
		if err := c.FlushAll(context.Background()).Err(); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

// newThrottle makes a throttled priority queue on its own client and key.
func newThrottle(tb testing.TB, key string, cfg throttle.Config) *throttle.Queue[string] {
	tb.Helper()
	c := client(tb)
	tq, err := throttle.New(c, redisqueue.NewPriority[string](c, key), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return tq
}

func fill(tb testing.TB, key string, n int) {
	tb.Helper()
	q := redisqueue.NewPriority[string](client(tb), key)
	var entries []redisqueue.Entry[string]
	for i := range n {
		entries = append(entries, redisqueue.Entry[string]{Item: "item-" + strconv.Itoa(i), Priority: i})
	}
	if err := q.PushAll(context.Background(), entries...); err != nil {
		tb.Fatal(err)
	}
}

func TestWindowAllowsLimitPopsThenDenies(t *testing.T) {
	ctx := context.Background()
	key := "link:a.com:queue"
	fill(t, key, 20)
	tq := newThrottle(t, key, throttle.Config{Window: 30 * time.Second, Limit: 5})
	for i := range 5 {
		item, status, err := tq.TryPop(ctx)
		if err != nil || status != throttle.Popped {
			t.Fatalf("pop %d: %v %v", i, status, err)
		}
		if want := "item-" + strconv.Itoa(19-i); item != want {
			t.Fatalf("pop %d = %q, want %q (highest priority first)", i, item, want)
		}
	}
	if _, status, err := tq.TryPop(ctx); err != nil || status != throttle.DeniedByWindow {
		t.Fatalf("6th pop in the window: %v %v", status, err)
	}
	c := client(t)
	if n := c.ZCard(ctx, key+":throttle_window").Val(); n != 5 {
		t.Fatalf("window holds %d hits, want 5", n)
	}
	if ttl := c.TTL(ctx, key+":throttle_window").Val(); ttl <= 0 || ttl > 60*time.Second {
		t.Fatalf("window key TTL = %v, want up to 2 windows", ttl)
	}
	if n, _ := tq.Len(ctx); n != 15 {
		t.Fatalf("Len = %d, want 15", n)
	}
}

func TestOldHitsLeaveTheWindow(t *testing.T) {
	ctx := context.Background()
	key := "link:old.com:queue"
	fill(t, key, 3)
	c := client(t)
	// Two hits older than the window, one recent (times from Redis's clock).
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	sec := float64(now.UnixMicro()) / 1e6
	c.ZAdd(ctx, key+":throttle_window",
		redis.Z{Score: sec - 100, Member: "old1"}, redis.Z{Score: sec - 61, Member: "old2"},
		redis.Z{Score: sec - 1, Member: "recent"})
	tq := newThrottle(t, key, throttle.Config{Window: 60 * time.Second, Limit: 2})
	if _, status, _ := tq.TryPop(ctx); status != throttle.Popped {
		t.Fatalf("pop with one live hit of two: %v", status)
	}
	if _, status, _ := tq.TryPop(ctx); status != throttle.DeniedByWindow {
		t.Fatalf("pop with two live hits of two: %v", status)
	}
	if members := c.ZRange(ctx, key+":throttle_window", 0, -1).Val(); len(members) != 2 || members[0] != "recent" {
		t.Fatalf("window = %v, want the expired hits removed", members)
	}
}

func TestEmptyQueueRecordsNoHit(t *testing.T) {
	ctx := context.Background()
	key := "link:empty.com:queue"
	tq := newThrottle(t, key, throttle.Config{Window: time.Minute, Limit: 2, Moderate: true})
	for range 3 {
		if _, status, err := tq.TryPop(ctx); err != nil || status != throttle.Empty {
			t.Fatalf("pop of empty queue: %v %v", status, err)
		}
	}
	c := client(t)
	if n := c.Exists(ctx, key+":throttle_window", key+":throttle_time").Val(); n != 0 {
		t.Fatalf("%d throttle keys written for pops that found nothing", n)
	}
	fill(t, key, 1)
	if _, ok, err := tq.Pop(ctx); !ok || err != nil {
		t.Fatalf("first real pop denied: %v", err)
	}
}

func TestModeratedPopsAreSpacedByWindowOverLimit(t *testing.T) {
	ctx := context.Background()
	key := "link:mod.com:queue"
	fill(t, key, 10)
	tq := newThrottle(t, key, throttle.Config{Window: time.Second, Limit: 5, Moderate: true})
	if tq.Moderation() != 200*time.Millisecond {
		t.Fatalf("Moderation = %v, want 200ms", tq.Moderation())
	}
	start := time.Now()
	if _, status, _ := tq.TryPop(ctx); status != throttle.Popped {
		t.Fatalf("first pop: %v", status)
	}
	if _, status, _ := tq.TryPop(ctx); status != throttle.DeniedByModeration {
		t.Fatalf("immediate second pop: %v", status)
	}
	var second time.Time
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok, _ := tq.Pop(ctx); ok {
			second = time.Now()
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if second.IsZero() {
		t.Fatal("second moderated pop never allowed")
	}
	if gap := second.Sub(start); gap < 200*time.Millisecond {
		t.Fatalf("second pop %v after the first, want >= 200ms", gap)
	}
	// The moderation key holds epoch seconds as text, as the original writes it.
	raw := client(t).Get(ctx, key+":throttle_time").Val()
	if f, err := strconv.ParseFloat(raw, 64); err != nil || f < float64(start.Unix()-5) {
		t.Fatalf("throttle_time = %q", raw)
	}
}

func TestModerationKeyWrittenByAnotherProcessIsRespected(t *testing.T) {
	ctx := context.Background()
	key := "link:py.com:queue"
	fill(t, key, 2)
	c := client(t)
	now := c.Time(ctx).Val()
	// What a Python crawler writes: str(time.time()).
	c.Set(ctx, key+":throttle_time", strconv.FormatFloat(float64(now.UnixMicro())/1e6, 'f', -1, 64), time.Minute)
	tq := newThrottle(t, key, throttle.Config{Window: 60 * time.Second, Limit: 2, Moderate: true})
	if _, status, _ := tq.TryPop(ctx); status != throttle.DeniedByModeration {
		t.Fatalf("pop right after another process's pop: %v", status)
	}
}

func TestLimitOfOneIsNeverModerated(t *testing.T) {
	tq := newThrottle(t, "link:one.com:queue", throttle.Config{Window: time.Second, Limit: 1, Moderate: true})
	if tq.Moderation() != 0 {
		t.Fatalf("Moderation = %v, want 0 for a limit of 1", tq.Moderation())
	}
}

func TestCustomKeyNames(t *testing.T) {
	ctx := context.Background()
	key := "link:custom.com:queue"
	fill(t, key, 1)
	tq := newThrottle(t, key, throttle.Config{Window: time.Minute, Limit: 3, Moderate: true,
		WindowName: "link:1.2.3.4:custom.com", ModName: "link:custom.com"})
	if tq.WindowKey() != "link:1.2.3.4:custom.com:throttle_window" || tq.ModerateKey() != "link:custom.com:throttle_time" {
		t.Fatalf("keys %s %s", tq.WindowKey(), tq.ModerateKey())
	}
	if _, ok, err := tq.Pop(ctx); !ok || err != nil {
		t.Fatal("pop denied", err)
	}
	c := client(t)
	if c.Exists(ctx, tq.WindowKey(), tq.ModerateKey()).Val() != 2 {
		t.Fatal("custom keys not written")
	}
	if err := tq.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Exists(ctx, tq.WindowKey(), tq.ModerateKey(), key).Val() != 0 {
		t.Fatal("Clear left keys behind")
	}
}

func TestElasticCatchUpBreaksModerationOnlyAfterLimitPopsAndUpToTheBuffer(t *testing.T) {
	ctx := context.Background()
	key := "link:elastic.com:queue"
	fill(t, key, 20)
	cfg := throttle.Config{Window: 400 * time.Millisecond, Limit: 4, Moderate: true, Elastic: true, ElasticBuffer: 1}
	tq := newThrottle(t, key, cfg)

	// Before this client has popped Limit items, moderation holds.
	if _, status, _ := tq.TryPop(ctx); status != throttle.Popped {
		t.Fatalf("first pop: %v", status)
	}
	if _, status, _ := tq.TryPop(ctx); status != throttle.DeniedByModeration {
		t.Fatalf("elastic before kick-in: %v, want denied by moderation", status)
	}
	for popped := 1; popped < cfg.Limit; {
		if _, ok, _ := tq.Pop(ctx); ok {
			popped++
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The window empties (as when the crawler fell behind); the last pop was
	// just now, so only the elastic catch-up can allow the next pops.
	c := client(t)
	c.Del(ctx, tq.WindowKey())
	c.Set(ctx, tq.ModerateKey(), strconv.FormatFloat(float64(c.Time(ctx).Val().UnixMicro())/1e6, 'f', 6, 64), time.Minute)
	plain := newThrottle(t, key, throttle.Config{Window: cfg.Window, Limit: cfg.Limit, Moderate: true})
	if _, status, _ := plain.TryPop(ctx); status != throttle.DeniedByModeration {
		t.Fatalf("non-elastic pop: %v, want denied by moderation", status)
	}
	var statuses []throttle.Status
	for range 4 {
		_, status, _ := tq.TryPop(ctx)
		statuses = append(statuses, status)
	}
	want := []throttle.Status{throttle.Popped, throttle.Popped, throttle.Popped, throttle.DeniedByModeration}
	if fmt.Sprint(statuses) != fmt.Sprint(want) {
		t.Fatalf("elastic pops = %v, want %v (catch up while limit-hits > buffer)", statuses, want)
	}
}

func TestInvalidConfigIsRejected(t *testing.T) {
	c := client(t)
	q := redisqueue.NewPriority[string](c, "k")
	for _, cfg := range []throttle.Config{
		{Window: 0, Limit: 1}, {Window: time.Second, Limit: 0}, {Window: time.Second, Limit: 1, ElasticBuffer: -1},
	} {
		if _, err := throttle.New(c, q, cfg); err == nil {
			t.Errorf("New accepted %+v", cfg)
		}
	}
}

func TestUndecodableItemIsReturnedAsDecodeError(t *testing.T) {
	ctx := context.Background()
	key := "link:bad.com:queue"
	c := client(t)
	c.ZAdd(ctx, key, redis.Z{Score: -1, Member: "{not json"})
	tq := newThrottle(t, key, throttle.Config{Window: time.Minute, Limit: 5})
	_, status, err := tq.TryPop(ctx)
	var de *redisqueue.DecodeError
	if status != throttle.Popped || !errors.As(err, &de) || string(de.Raw) != "{not json" {
		t.Fatalf("TryPop = %v, %v", status, err)
	}
}

// popRecord brackets a successful pop: Redis decided at a time in [before, after].
type popRecord struct {
	item          string
	before, after time.Time
}

// runPoppers pops from key with n clients, each on its own connection, until
// total items were popped or the deadline passes.
func runPoppers(t *testing.T, key string, cfg throttle.Config, n, total int) []popRecord {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var pops []popRecord
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for range n {
		tq := newThrottle(t, key, cfg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				mu.Lock()
				done := len(pops) >= total
				mu.Unlock()
				if done {
					return
				}
				before := time.Now()
				item, ok, err := tq.Pop(ctx)
				after := time.Now()
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					pops = append(pops, popRecord{item, before, after})
					mu.Unlock()
				} else {
					time.Sleep(2 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	sort.Slice(pops, func(i, j int) bool { return pops[i].after.Before(pops[j].after) })
	return pops
}

func checkExactlyOnce(t *testing.T, pops []popRecord, total int) {
	t.Helper()
	if len(pops) != total {
		t.Fatalf("popped %d items, want %d", len(pops), total)
	}
	seen := map[string]bool{}
	for _, p := range pops {
		if seen[p.item] {
			t.Fatalf("%s popped twice", p.item)
		}
		seen[p.item] = true
	}
}

func TestConcurrentPoppersNeverExceedTheLimitInAnyWindow(t *testing.T) {
	key := "link:concurrent.com:queue"
	const total = 30
	fill(t, key, total)
	cfg := throttle.Config{Window: 500 * time.Millisecond, Limit: 6}
	pops := runPoppers(t, key, cfg, 4, total)
	checkExactlyOnce(t, pops, total)
	// Any Limit+1 consecutive pops span at least one window: the (i+Limit)-th
	// pop was decided no earlier than Window after the i-th.
	sort.Slice(pops, func(i, j int) bool { return pops[i].before.Before(pops[j].before) })
	for i := 0; i+cfg.Limit < len(pops); i++ {
		j := i + cfg.Limit
		if span := pops[j].after.Sub(pops[i].before); span < cfg.Window {
			t.Fatalf("pops %d..%d (%d pops) within %v, window %v allows %d", i, j, cfg.Limit+1, span, cfg.Window, cfg.Limit)
		}
	}
}

func TestConcurrentModeratedPoppersAreSpacedEvenly(t *testing.T) {
	key := "link:concurrent-mod.com:queue"
	const total = 12
	fill(t, key, total)
	cfg := throttle.Config{Window: time.Second, Limit: 10, Moderate: true}
	pops := runPoppers(t, key, cfg, 4, total)
	checkExactlyOnce(t, pops, total)
	gap := cfg.Window / time.Duration(cfg.Limit)
	sort.Slice(pops, func(i, j int) bool { return pops[i].before.Before(pops[j].before) })
	for i := 1; i < len(pops); i++ {
		if d := pops[i].after.Sub(pops[i-1].before); d < gap {
			t.Fatalf("pops %d and %d only %v apart, moderation is %v", i-1, i, d, gap)
		}
	}
}

// BenchmarkThrottledPop measures throttled pops per second with 8 concurrent
// poppers (each on its own connection pool slot) when the limit is not binding.
func BenchmarkThrottledPop(b *testing.B) {
	ctx := context.Background()
	key := "bench:throttled:queue"
	c := client(b)
	c.Del(ctx, key, key+":throttle_window")
	q := redisqueue.NewPriority[string](c, key)
	batch := make([]redisqueue.Entry[string], 0, 1000)
	for i := range b.N + 100 {
		batch = append(batch, redisqueue.Entry[string]{Item: "http://example.com/" + strconv.Itoa(i), Priority: i % 10})
		if len(batch) == cap(batch) {
			if err := q.PushAll(ctx, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := q.PushAll(ctx, batch...); err != nil {
		b.Fatal(err)
	}
	// A one-second window keeps the window set at its steady-state size.
	tq, err := throttle.New(c, q, throttle.Config{Window: time.Second, Limit: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(4) // 4 x GOMAXPROCS(2) = 8 poppers
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok, err := tq.Pop(ctx); err != nil || !ok {
				b.Errorf("pop: ok=%v err=%v", ok, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pops/s")
}
