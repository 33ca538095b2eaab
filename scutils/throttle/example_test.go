package throttle_test

import (
	"context"
	"fmt"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness/memredis"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisqueue"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// Five pops per ten seconds from a priority queue, shared by every process
// using the same key: the sixth pop in the window is denied.
func ExampleNew() {
	rdb, done := memredis.Start() // or a real server: redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer done()
	ctx := context.Background()

	q := redisqueue.NewPriority[string](rdb, "link:example.com:queue")
	t, err := throttle.New(rdb, q, throttle.Config{Window: 10 * time.Second, Limit: 5})
	if err != nil {
		panic(err)
	}
	for i := range 8 {
		_ = t.PushPriority(ctx, fmt.Sprintf("item-%d", i), i)
	}
	for range 6 {
		item, status, _ := t.TryPop(ctx)
		fmt.Println(status, item)
	}
	// Output:
	// popped item-7
	// popped item-6
	// popped item-5
	// popped item-4
	// popped item-3
	// denied by window
}
