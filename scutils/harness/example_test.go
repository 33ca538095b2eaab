package harness_test

import (
	"context"
	"fmt"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// Packages that share one server across tests launch it in TestMain. The
// example is compiled but not run (it has no Output line): it needs
// redis-server, and an example cannot skip on a machine without one as the
// tests do. TestRedisKeepsAppendOnlyDataAcrossRestart runs the same calls.
func ExampleLaunchRedis() {
	r, err := harness.LaunchRedis(harness.RedisOptions{})
	if err != nil {
		fmt.Println("no redis-server here:", err)
		return
	}
	defer r.Close()
	c := r.Client()
	defer c.Close()
	fmt.Println(c.Ping(context.Background()).Val()) // PONG
}

// The in-process broker speaks the Kafka protocol on loopback.
func ExampleLaunchKafka() {
	k, err := harness.LaunchKafka(harness.KafkaOptions{Topics: []string{"demo.incoming"}, Partitions: 3})
	if err != nil {
		panic(err)
	}
	defer k.Close()
	fmt.Println(len(k.Addrs), "broker")
	// Output: 1 broker
}
