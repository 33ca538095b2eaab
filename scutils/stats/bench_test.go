package stats

import (
	"context"
	"runtime"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// benchGoroutines is how many goroutines increment at once.
const benchGoroutines = 8

// runIncrements runs incr from benchGoroutines goroutines sharing one client
// (as the goroutines of one component do) and reports increments per second.
func runIncrements(b *testing.B, incr func(context.Context) error) {
	ctx := context.Background()
	b.SetParallelism((benchGoroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := incr(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "incr/s")
}

func BenchmarkRollingTimeWindowIncrement(b *testing.B) {
	rdb := harness.StartRedis(b).TestClient(b)
	rw, err := NewRollingTimeWindow(context.Background(), rdb, "stats:bench:rolling", WithWindow(Seconds1Minute))
	if err != nil {
		b.Fatal(err)
	}
	defer rw.Stop()
	runIncrements(b, rw.Increment)
}

// BenchmarkWindowSetIncrement uses the default STATS_TIMES (six windows)
// plus the lifetime counter: seven keys per increment.
func BenchmarkWindowSetIncrement(b *testing.B) {
	rdb := harness.StartRedis(b).TestClient(b)
	windows, err := WindowsByName(Times.Default())
	if err != nil {
		b.Fatal(err)
	}
	ws, err := NewWindowSet(context.Background(), rdb, "stats:bench:total", windows, true)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Stop()
	runIncrements(b, ws.Increment)
}
