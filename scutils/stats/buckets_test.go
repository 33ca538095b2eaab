package stats

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// t0 is a time on a bucket boundary of every window the tests use.
var t0 = time.Unix(1_800_000_000, 0)

// addAt counts n events in s at t.
func addAt(t *testing.T, rdb *redis.Client, clock *fakeClock, s *BucketSet, at time.Time, n int) {
	t.Helper()
	clock.Set(at)
	pipe := rdb.Pipeline()
	s.AddTo(context.Background(), pipe, n)
	if _, err := pipe.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func fields(t *testing.T, rdb *redis.Client, key string) []string {
	t.Helper()
	f, err := rdb.HKeys(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(f)
	return f
}

func TestBucketSetCountsEachWindowWholeBucketsAndTrimsWhatLeavesIt(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	clock := newFakeClock(t0)
	s := closeAtEnd(t, must(NewBucketSet(ctx, rdb, "counts", []int{900, 3600, 900}, WithClock(clock.Now), WithCycleTime(0)))(t))
	if got := s.Windows(); !slices.Equal(got, []int{900, 3600}) {
		t.Fatalf("Windows = %v", got)
	}
	if BucketSeconds(900) != 5 || BucketSeconds(3600) != 20 || BucketSeconds(604800) != 3360 || BucketSeconds(60) != 1 {
		t.Fatalf("bucket lengths %d %d %d %d", BucketSeconds(900), BucketSeconds(3600), BucketSeconds(604800), BucketSeconds(60))
	}
	addAt(t, rdb, clock, s, t0.Add(-3590*time.Second), 3) // in the hour only
	addAt(t, rdb, clock, s, t0.Add(-903*time.Second), 1)  // in the bucket before the 15 minutes' oldest
	addAt(t, rdb, clock, s, t0.Add(-890*time.Second), 2)
	addAt(t, rdb, clock, s, t0.Add(-10*time.Second), 4)
	addAt(t, rdb, clock, s, t0, 1)
	s.AddTo(ctx, rdb.Pipeline(), 0) // nothing to count: nothing queued

	value := func(w int) int64 { return must(s.Value(ctx, w))(t) }
	if v900, v3600, life := value(900), value(3600), must(s.LifetimeValue(ctx))(t); v900 != 7 || v3600 != 11 || life != 11 {
		t.Fatalf("at t0: 900s %d (want 7), 3600s %d (want 11), lifetime %d (want 11)", v900, v3600, life)
	}
	if _, err := s.Value(ctx, 60); err == nil {
		t.Error("Value of a window the set does not keep: no error")
	}
	ttl := must(rdb.TTL(ctx, "counts").Result())(t)
	if ttl <= 3600*time.Second || ttl > 3620*time.Second {
		t.Errorf("TTL %s, want the longest window and one of its buckets (1h0m20s)", ttl)
	}

	// The first trim sweeps; nothing has left its window yet but the
	// 903-second-old bucket of the 15 minutes.
	if err := s.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	b := func(w int, at time.Time) string {
		return bucketField(w, floorDiv(at.Unix(), BucketSeconds(w)))
	}
	want := []string{b(3600, t0.Add(-3590*time.Second)), b(3600, t0.Add(-903*time.Second)), b(3600, t0.Add(-890*time.Second)),
		b(3600, t0.Add(-10*time.Second)), b(3600, t0), b(900, t0.Add(-890*time.Second)), b(900, t0.Add(-10*time.Second)), b(900, t0),
		lifetimeField}
	slices.Sort(want)
	if got := fields(t, rdb, "counts"); !slices.Equal(got, want) {
		t.Fatalf("after the first trim: %q, want %q", got, want)
	}

	// 20 seconds on, a trim by name deletes what left each window.
	clock.Set(t0.Add(20 * time.Second))
	if err := s.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	want = []string{b(3600, t0.Add(-903*time.Second)), b(3600, t0.Add(-890*time.Second)), b(3600, t0.Add(-10*time.Second)), b(3600, t0),
		b(900, t0.Add(-10*time.Second)), b(900, t0), lifetimeField}
	slices.Sort(want)
	if got := fields(t, rdb, "counts"); !slices.Equal(got, want) {
		t.Fatalf("20s later: %q, want %q", got, want)
	}
	if v900, v3600, life := value(900), value(3600), must(s.LifetimeValue(ctx))(t); v900 != 5 || v3600 != 8 || life != 11 {
		t.Fatalf("20s later: 900s %d (want 5), 3600s %d (want 8), lifetime %d (want 11)", v900, v3600, life)
	}
}

// A sweep (the first trim, or after a gap of more than maxTrimFields
// buckets) deletes the buckets out of their own window whoever wrote them,
// and leaves alone what is not a bucket.
func TestBucketSetSweepsOtherWindowsBucketsAndLongGaps(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	clock := newFakeClock(t0)
	s := closeAtEnd(t, must(NewBucketSet(ctx, rdb, "counts", []int{900}, WithClock(clock.Now), WithCycleTime(0)))(t))
	old60 := bucketField(60, t0.Add(-2*time.Minute).Unix())
	now60 := bucketField(60, t0.Unix())
	if err := rdb.HSet(ctx, "counts", old60, 5, now60, 1, "odd", "x", "9:x", 1).Err(); err != nil {
		t.Fatal(err)
	}
	addAt(t, rdb, clock, s, t0, 2)
	if err := s.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{now60, "9:x", bucketField(900, t0.Unix()/5), lifetimeField, "odd"}
	slices.Sort(want)
	if got := fields(t, rdb, "counts"); !slices.Equal(got, want) {
		t.Fatalf("after the sweep: %q, want %q", got, want)
	}
	// Two days later the gap is too long to trim by name: swept again.
	clock.Set(t0.Add(48 * time.Hour))
	if err := s.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := fields(t, rdb, "counts"), []string{"9:x", lifetimeField, "odd"}; !slices.Equal(got, want) {
		t.Fatalf("two days later: %q, want %q", got, want)
	}
	if got := CountBuckets(map[string]string{"odd": "x", "9:x": "1", lifetimeField: "2", "900:-1": "3", bucketField(900, t0.Unix()/5): "nan"}, t0); len(got) != 1 || got[lifetimeField] != 2 {
		t.Errorf("CountBuckets of odd fields: %v, want only the lifetime 2", got)
	}
}

// On a cluster the crawlers count responses in BucketSets; a Reader with
// the cluster layout reads them as the original's window keys, beside the
// heartbeats, each window and the lifetime summed by spider and by host.
func TestReaderReadsTheCrawlersBucketSetsAsWindows(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	clock := newFakeClock(t0)
	heartbeat(t, rdb, rediskeys.CrawlerHeartbeatKey("host1", "link", "c1"))
	heartbeat(t, rdb, rediskeys.CrawlerHeartbeatKey("host2", "link", "c2"))
	counts := func(host, spider, code string) *BucketSet {
		return closeAtEnd(t, must(NewBucketSet(ctx, rdb, rediskeys.Cluster.CrawlerResponses(host, spider, code), []int{900, 3600}, WithClock(clock.Now), WithCycleTime(0)))(t))
	}
	h1, h2, h2w := counts("host1", "link", "200"), counts("host2", "link", "200"), counts("host2", "wandering", "404")
	addAt(t, rdb, clock, h1, t0.Add(-30*time.Minute), 3)
	addAt(t, rdb, clock, h1, t0.Add(-time.Minute), 2)
	addAt(t, rdb, clock, h2, t0.Add(-time.Second), 1)
	addAt(t, rdb, clock, h2w, t0.Add(-2*time.Hour), 7)
	if err := rdb.Set(ctx, rediskeys.Cluster.CrawlerResponses("host3", "link", "200"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Under the hashes' pattern but not one of them (a window's sorted set
	// at a hash's name): left out, not read as a host named "responses".
	if err := rdb.ZAdd(ctx, rediskeys.Cluster.CrawlerResponses("host4", "link", "200")+":900", redis.Z{Score: float64(t0.Unix()), Member: "hit"}).Err(); err != nil {
		t.Fatal(err)
	}

	want := &CrawlerStats{
		Spiders: map[string]*SpiderStats{
			"link":      {Running: 2, Hosts: map[string]int{"host1": 1, "host2": 1}, Codes: map[string]Counts{"200": {"900": 3, "3600": 6, "lifetime": 6}}},
			"wandering": {Codes: map[string]Counts{"404": {"lifetime": 7}}, Hosts: map[string]int{}},
		},
		Machines: map[string]map[string]Counts{
			"host1": {"200": {"900": 2, "3600": 5, "lifetime": 5}},
			"host2": {"200": {"900": 1, "3600": 1, "lifetime": 1}, "404": {"lifetime": 7}},
		},
		Running: 2,
	}
	// A Redis Cluster's layout, and one Redis's with STATS_RESPONSE_BUCKETS
	// (the same keys), read the hashes.
	for _, layout := range []rediskeys.Layout{rediskeys.Cluster, rediskeys.Single.WithResponseBuckets(true)} {
		r := Reader{Redis: rdb, Now: t0, Layout: layout}
		what := func(s string) string { return fmt.Sprintf("%s (cluster %t)", s, layout.IsCluster()) }
		check(t, what("Crawlers"), must(r.Crawlers(ctx))(t), want)
		crawlers, _, err := r.CrawlersAndQueues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		check(t, what("CrawlersAndQueues"), crawlers, want)
		check(t, what("Cluster"), must(r.Cluster(ctx))(t).Crawlers, want)

		// The history of the last hour, a minute a step, from the 3600s
		// window's buckets (20 s long): each in the minute it starts in.
		h, err := r.CrawlerHistory(ctx, time.Hour, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		wantSteps := map[int]int64{30: 3, 59: 3}
		for i, n := range h.Counts {
			if n != wantSteps[i] {
				t.Errorf("%s: step %d counts %d, want %d", what("history"), i, n, wantSteps[i])
			}
		}
		if h.Covered != time.Hour {
			t.Errorf("%s: Covered %s, want 1h0m0s", what("history"), h.Covered)
		}
		// A span longer than every window: the longest, and how far it reaches.
		h, err = r.CrawlerHistory(ctx, 2*time.Hour, 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if h.Total() != 6 || h.Covered != time.Hour {
			t.Errorf("%s: two hours: %d responses covering %s, want 6 covering 1h0m0s", what("history"), h.Total(), h.Covered)
		}
	}

	// With the original's layout the hashes are not the crawlers' counts.
	single := must(Reader{Redis: rdb, Now: t0}.Crawlers(ctx))(t)
	if len(single.Machines) != 0 || single.Running != 2 {
		t.Errorf("one-Redis layout read %d machines and %d crawlers, want 0 and 2", len(single.Machines), single.Running)
	}

	// On one Redis with the hashes, the original's sorted sets still count
	// (a crawler not switched yet, or counts kept from before the switch):
	// host1's 200s a minute ago in the 900 s window, beside its hash.
	old := closeAtEnd(t, must(NewWindowSet(ctx, rdb, rediskeys.CrawlerStatusKey("host1", "link", "200"), []int{900}, false, WithClock(clock.Now), WithCycleTime(0)))(t))
	clock.Set(t0.Add(-time.Minute))
	for range 4 {
		if err := old.Increment(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mixed := must(Reader{Redis: rdb, Now: t0, Layout: rediskeys.Single.WithResponseBuckets(true)}.Crawlers(ctx))(t)
	if got := mixed.Machines["host1"]["200"]; got["900"] != 6 || got["3600"] != 5 {
		t.Errorf("host1's 200s with a sorted set beside the hash: %v, want 900: 6 (2 + 4) and 3600: 5", got)
	}
}

func TestBucketSetRejectsANonPositiveWindow(t *testing.T) {
	for _, w := range []int{0, -5} {
		if _, err := NewBucketSet(context.Background(), nil, "k", []int{900, w}); err == nil {
			t.Errorf("window %d accepted", w)
		}
	}
	s := must(NewBucketSet(context.Background(), nil, "k", nil))(t)
	if s.ttl != 0 || len(s.Keys()) != 1 || s.Keys()[0] != "k" {
		t.Errorf("a set without windows: ttl %s, keys %q", s.ttl, s.Keys())
	}
}
