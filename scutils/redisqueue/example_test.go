package redisqueue_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisqueue"
)

// The spec's example_rq.py as a priority queue: the highest priority pops first.
func ExampleNewPriority() {
	mr := miniredis.NewMiniRedis() // or a real server: redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	if err := mr.Start(); err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

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
