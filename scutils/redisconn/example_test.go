package redisconn_test

import (
	"fmt"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Every component connects to Redis from the same REDIS_* settings.
func ExampleNew() {
	s, _ := settings.Load(redisconn.Settings(), settings.Options{Environ: []string{"REDIS_HOST=redis", "REDIS_DB=1"}})
	c := redisconn.New(s)
	defer c.Close()
	fmt.Println(c.Options().Addr, c.Options().DB)
	// Output: redis:6379 1
}
