package redisqueue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisqueue"
)

// One real redis-server serves the whole package; each test uses its own keys.
var server harness.SharedRedis

func TestMain(m *testing.M) { server.Main(m) }

func key(tb testing.TB) string { return "test:" + tb.Name() }

// eachKind runs test as a subtest for each kind of queue.
func eachKind(t *testing.T, test func(t *testing.T, kind redisqueue.Kind)) {
	for _, kind := range []redisqueue.Kind{redisqueue.FIFO, redisqueue.Stack, redisqueue.Priority} {
		t.Run(kind.String(), func(t *testing.T) { test(t, kind) })
	}
}

func TestEachKindPopsInItsOrder(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		kind redisqueue.Kind
		want string
	}{
		{redisqueue.FIFO, "item1 item2 item3"},
		{redisqueue.Stack, "item3 item2 item1"},
		{redisqueue.Priority, "item2 item1 item3"}, // priorities 50, 100, 20 as in the spec's example
	}
	for _, tc := range cases {
		t.Run(tc.kind.String(), func(t *testing.T) {
			q := redisqueue.New[string](server.TestClient(t), key(t), tc.kind)
			for i, p := range []int{50, 100, 20} {
				if err := q.PushPriority(ctx, fmt.Sprintf("item%d", i+1), p); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := q.Len(ctx); err != nil || n != 3 {
				t.Fatalf("Len = %d, %v", n, err)
			}
			var got []string
			for range 3 {
				item, ok, err := q.Pop(ctx, 0)
				if err != nil || !ok {
					t.Fatalf("Pop: %v %v", ok, err)
				}
				got = append(got, item)
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("popped %v, want %s", got, tc.want)
			}
			if _, ok, err := q.Pop(ctx, 0); ok || err != nil {
				t.Fatalf("Pop of empty queue: ok=%v err=%v", ok, err)
			}
		})
	}
}

func TestPriorityQueueStoresJSONMembersScoredByMinusPriority(t *testing.T) {
	ctx := context.Background()
	c := server.TestClient(t)
	type req struct {
		URL      string `json:"url"`
		Priority int    `json:"priority"`
	}
	q := redisqueue.NewPriority[req](c, key(t))
	if err := q.PushPriority(ctx, req{URL: "http://a.com", Priority: 5}, 5); err != nil {
		t.Fatal(err)
	}
	zs, err := c.ZRangeWithScores(ctx, key(t), 0, -1).Result()
	if err != nil || len(zs) != 1 {
		t.Fatalf("zset = %v, %v", zs, err)
	}
	if zs[0].Score != -5 || zs[0].Member != `{"url":"http://a.com","priority":5}` {
		t.Fatalf("stored %v with score %v", zs[0].Member, zs[0].Score)
	}
	// A request written by the Python original (json.dumps, spaces) decodes too.
	c.ZAdd(ctx, key(t), redis.Z{Score: -10, Member: `{"url": "http://b.com", "priority": 10}`})
	got, ok, err := q.Pop(ctx, 0)
	if err != nil || !ok || got.URL != "http://b.com" {
		t.Fatalf("Pop = %+v %v %v", got, ok, err)
	}
}

func TestBlockingPopWaitsForAPushAndTimesOut(t *testing.T) {
	ctx := context.Background()
	eachKind(t, func(t *testing.T, kind redisqueue.Kind) {
		q := redisqueue.New[string](server.TestClient(t), key(t), kind)
		start := time.Now()
		if _, ok, err := q.Pop(ctx, 200*time.Millisecond); ok || err != nil {
			t.Fatalf("Pop with timeout on empty queue: ok=%v err=%v", ok, err)
		}
		if time.Since(start) < 150*time.Millisecond {
			t.Fatalf("blocking pop returned after %v, before its timeout", time.Since(start))
		}
		pusher := redisqueue.New[string](server.TestClient(t), key(t), kind)
		go func() {
			time.Sleep(50 * time.Millisecond)
			_ = pusher.Push(ctx, "late")
		}()
		item, ok, err := q.Pop(ctx, 5*time.Second)
		if err != nil || !ok || item != "late" {
			t.Fatalf("Pop = %q %v %v", item, ok, err)
		}
	})
}

func TestPushAllAndPopNMoveManyItemsInOrder(t *testing.T) {
	ctx := context.Background()
	eachKind(t, func(t *testing.T, kind redisqueue.Kind) {
		q := redisqueue.New[int](server.TestClient(t), key(t), kind)
		var entries []redisqueue.Entry[int]
		for i := range 10 {
			entries = append(entries, redisqueue.Entry[int]{Item: i, Priority: i})
		}
		if err := q.PushAll(ctx, entries...); err != nil {
			t.Fatal(err)
		}
		got, err := q.PopN(ctx, 4)
		if err != nil {
			t.Fatal(err)
		}
		want := map[redisqueue.Kind]string{
			redisqueue.FIFO: "[0 1 2 3]", redisqueue.Stack: "[9 8 7 6]", redisqueue.Priority: "[9 8 7 6]",
		}[kind]
		if fmt.Sprint(got) != want {
			t.Fatalf("PopN = %v, want %s", got, want)
		}
		rest, err := q.PopN(ctx, 100)
		if err != nil || len(rest) != 6 {
			t.Fatalf("PopN rest = %v, %v", rest, err)
		}
		if empty, err := q.PopN(ctx, 5); err != nil || len(empty) != 0 {
			t.Fatalf("PopN of empty = %v, %v", empty, err)
		}
	})
}

func TestUndecodableItemIsReportedWithItsBytes(t *testing.T) {
	ctx := context.Background()
	c := server.TestClient(t)
	q := redisqueue.NewFIFO[map[string]any](c, key(t))
	c.LPush(ctx, key(t), "not json{")
	_, ok, err := q.Pop(ctx, 0)
	var de *redisqueue.DecodeError
	if ok || !errors.As(err, &de) || string(de.Raw) != "not json{" || de.Key != key(t) {
		t.Fatalf("Pop = ok %v, err %v", ok, err)
	}
	c.LPush(ctx, key(t), `{"a":1}`, "bad", `{"b":2}`)
	items, err := q.PopN(ctx, 3)
	if len(items) != 2 || !errors.As(err, &de) || string(de.Raw) != "bad" {
		t.Fatalf("PopN = %v, %v", items, err)
	}
}

type upperCodec struct{}

func (upperCodec) Marshal(v any) ([]byte, error) { return []byte(strings.ToUpper(v.(string))), nil }
func (upperCodec) Unmarshal(b []byte, v any) error {
	*(v.(*string)) = strings.ToLower(string(b))
	return nil
}

func TestCustomCodecIsUsedBothWays(t *testing.T) {
	ctx := context.Background()
	c := server.TestClient(t)
	q := redisqueue.NewStack[string](c, key(t), redisqueue.WithCodec(upperCodec{}))
	if err := q.Push(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	if raw := c.LIndex(ctx, key(t), 0).Val(); raw != "HELLO" {
		t.Fatalf("stored %q", raw)
	}
	if item, _, _ := q.Pop(ctx, 0); item != "hello" {
		t.Fatalf("popped %q", item)
	}
}

func TestClearEmptiesAndEncodeErrorsAreReturned(t *testing.T) {
	ctx := context.Background()
	q := redisqueue.NewPriority[any](server.TestClient(t), key(t))
	if err := q.Push(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if err := q.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := q.Len(ctx); n != 0 {
		t.Fatalf("Len after Clear = %d", n)
	}
	if err := q.Push(ctx, make(chan int)); err == nil || !strings.Contains(err.Error(), key(t)) {
		t.Fatalf("encoding a channel: %v", err)
	}
}

func TestConcurrentPoppersTakeEachItemOnce(t *testing.T) {
	ctx := context.Background()
	q := redisqueue.NewPriority[int](server.TestClient(t), key(t))
	const n = 500
	var entries []redisqueue.Entry[int]
	for i := range n {
		entries = append(entries, redisqueue.Entry[int]{Item: i, Priority: i % 7})
	}
	if err := q.PushAll(ctx, entries...); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := make(map[int]int)
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := redisqueue.NewPriority[int](server.TestClient(t), key(t))
			for {
				item, ok, err := mine.Pop(ctx, 0)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				seen[item]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("popped %d distinct items, want %d", len(seen), n)
	}
	for item, count := range seen {
		if count != 1 {
			t.Fatalf("item %d popped %d times", item, count)
		}
	}
}

// BenchmarkPriorityPushPopPipelined measures push+pop pairs per second when
// requests are moved 100 at a time (PushAll + PopN), from 8 goroutines.
func BenchmarkPriorityPushPopPipelined(b *testing.B) {
	benchPushPop(b, 100)
}

// BenchmarkPriorityPushPopSingle measures push+pop pairs per second, one item
// per round trip, from 8 goroutines.
func BenchmarkPriorityPushPopSingle(b *testing.B) {
	benchPushPop(b, 1)
}

func benchPushPop(b *testing.B, batch int) {
	ctx := context.Background()
	c := server.TestClient(b)
	c.Del(ctx, "bench:pq")
	b.SetParallelism(4) // 4 x GOMAXPROCS(2) = 8 goroutines
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		q := redisqueue.NewPriority[map[string]any](c, "bench:pq")
		entries := make([]redisqueue.Entry[map[string]any], batch)
		seq := 0
		for pb.Next() {
			for i := range entries {
				seq++
				entries[i] = redisqueue.Entry[map[string]any]{
					Item:     map[string]any{"url": fmt.Sprintf("http://example.com/%p/%d", pb, seq), "priority": seq % 10},
					Priority: seq % 10,
				}
			}
			if err := q.PushAll(ctx, entries...); err != nil {
				b.Error(err)
				return
			}
			if batch == 1 {
				if _, _, err := q.Pop(ctx, 0); err != nil {
					b.Error(err)
					return
				}
			} else if _, err := q.PopN(ctx, batch); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "pairs/s")
}
