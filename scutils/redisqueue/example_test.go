package redisqueue_test

import (
	"context"
	"fmt"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness/memredis"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisqueue"
)

// The spec's example_rq.py as a priority queue: the highest priority pops first.
func ExampleNewPriority() {
	rdb, done := memredis.Start() // or a real server: redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer done()

	ctx := context.Background()
	q := redisqueue.NewPriority[string](rdb, "my_key")
	_ = q.PushPriority(ctx, "item1", 50)
	_ = q.PushPriority(ctx, "item2", 100)
	_ = q.PushPriority(ctx, "item3", 20)
	for i := 1; i <= 3; i++ {
		item, _, _ := q.Pop(ctx, 0)
		fmt.Println("Pop", i, item)
	}
	// Output:
	// Pop 1 item2
	// Pop 2 item1
	// Pop 3 item3
}
