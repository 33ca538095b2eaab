package stats_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness/memredis"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

func ExampleNewRollingTimeWindow() {
	rdb, done := memredis.Start()
	defer done()
	ctx := context.Background()

	// Hits in the last minute, trimmed in Redis every second.
	hits, err := stats.NewRollingTimeWindow(ctx, rdb, "example:hits",
		stats.WithWindow(stats.Seconds1Minute), stats.WithCycleTime(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer hits.Close()

	for range 3 {
		if err := hits.Increment(ctx); err != nil {
			log.Fatal(err)
		}
	}
	n, err := hits.Value(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(hits.Key(), n)
	// Output: example:hits 3
}

func ExampleNewWindowSet() {
	rdb, done := memredis.Start()
	defer done()
	ctx := context.Background()

	// What a Kafka Monitor does with STATS_TIMES for its total request count.
	windows, err := stats.WindowsByName([]string{"SECONDS_15_MINUTE", "SECONDS_1_HOUR"})
	if err != nil {
		log.Fatal(err)
	}
	total, err := stats.NewWindowSet(ctx, rdb, "stats:kafka-monitor:total", windows, true)
	if err != nil {
		log.Fatal(err)
	}
	defer total.Close()

	// One round trip per event, however many windows.
	for range 2 {
		if err := total.Increment(ctx); err != nil {
			log.Fatal(err)
		}
	}
	quarter, _ := total.Value(ctx, stats.Seconds15Minute)
	lifetime, _ := total.LifetimeValue(ctx)
	fmt.Println(total.Keys())
	fmt.Println(quarter, lifetime)
	// Output:
	// [stats:kafka-monitor:total:900 stats:kafka-monitor:total:3600 stats:kafka-monitor:total:lifetime]
	// 2 2
}

func ExampleNewTimeWindow() {
	rdb, done := memredis.Start()
	defer done()
	ctx := context.Background()

	// Hits per hour, keeping the last 3 hours' keys. The clock is fixed here
	// to show the key name; leave WithClock out in real code.
	clock := func() time.Time { return time.Date(2016, 1, 31, 19, 23, 0, 0, time.UTC) }
	hourly, err := stats.NewTimeWindow(ctx, rdb, "example:hourly",
		stats.WithWindow(stats.Seconds1Hour), stats.WithKeepMax(3), stats.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	defer hourly.Close()

	if err := hourly.Increment(ctx); err != nil {
		log.Fatal(err)
	}
	n, _ := hourly.Value(ctx)
	fmt.Println(hourly.Key(), n)
	// Output: example:hourly:2016-01-31_19:00:00 1
}

func ExampleNewCounter() {
	rdb, done := memredis.Start()
	defer done()
	ctx := context.Background()

	// A plain distributed integer counter starting at 100.
	jobs, err := stats.NewCounter(ctx, rdb, "example:jobs", stats.WithRoll(false), stats.WithStartAt(100))
	if err != nil {
		log.Fatal(err)
	}
	defer jobs.Close()

	for range 3 {
		if err := jobs.Increment(ctx); err != nil {
			log.Fatal(err)
		}
	}
	n, _ := jobs.Value(ctx)
	fmt.Println(n)
	// Output: 103
}

func ExampleNewUniqueCounter() {
	rdb, done := memredis.Start()
	defer done()
	ctx := context.Background()

	visitors, err := stats.NewUniqueCounter(ctx, rdb, "example:visitors", stats.WithWindow(stats.Seconds1Day))
	if err != nil {
		log.Fatal(err)
	}
	defer visitors.Close()

	for _, ip := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.1"} {
		if err := visitors.Increment(ctx, ip); err != nil {
			log.Fatal(err)
		}
	}
	n, _ := visitors.Value(ctx)
	fmt.Println(n)
	// Output: 2
}

func ExampleNewHyperLogLogCounter() {
	rdb, done := memredis.Start()
	defer done()
	ctx := context.Background()

	// Approximate distinct URLs seen, forever (no rolling).
	urls, err := stats.NewHyperLogLogCounter(ctx, rdb, "example:urls", stats.WithRoll(false))
	if err != nil {
		log.Fatal(err)
	}
	defer urls.Close()

	for _, u := range []string{"http://a/", "http://b/", "http://a/"} {
		if err := urls.Increment(ctx, u); err != nil {
			log.Fatal(err)
		}
	}
	n, _ := urls.Value(ctx)
	fmt.Println(n)
	// Output: 2
}

func ExampleNewBitmapCounter() {
	rdb, done := memredis.Start()
	defer done()
	ctx := context.Background()

	// Which user ids were active this hour.
	active, err := stats.NewBitmapCounter(ctx, rdb, "example:active")
	if err != nil {
		log.Fatal(err)
	}
	defer active.Close()

	for _, id := range []int64{7, 42, 7} {
		if err := active.Increment(ctx, id); err != nil {
			log.Fatal(err)
		}
	}
	n, _ := active.Value(ctx)
	fmt.Println(n)
	// Output: 2
}

func ExampleWindowByName() {
	s, ok := stats.WindowByName("SECONDS_15_MINUTE")
	fmt.Println(s, ok)
	// Output: 900 true
}
