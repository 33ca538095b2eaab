package redisconn_test

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Every component connects to Redis from the same REDIS_* settings.
func ExampleNew() {
	s, _ := settings.Load(redisconn.Settings(), settings.Options{Environ: []string{"REDIS_HOST=redis", "REDIS_DB=1"}})
	c := redisconn.New(s).(*redis.Client)
	defer c.Close()
	fmt.Println(c.Options().Addr, c.Options().DB)
	// Output: redis:6379 1
}

// With REDIS_CLUSTER_NODES set, the client is a cluster client of those
// seeds.
func ExampleNew_cluster() {
	s, _ := settings.Load(redisconn.Settings(), settings.Options{Environ: []string{"REDIS_CLUSTER_NODES=10.0.0.1:7000, 10.0.0.2:7000"}})
	c := redisconn.New(s).(*redis.ClusterClient)
	defer c.Close()
	fmt.Println(c.Options().Addrs)
	// Output: [10.0.0.1:7000 10.0.0.2:7000]
}
