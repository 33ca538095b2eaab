package harness_test

import (
	"context"
	"fmt"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// Packages that share one server across tests launch it in TestMain.
func ExampleLaunchRedis() {
	r, err := harness.LaunchRedis(harness.RedisOptions{})
	if err != nil {
		fmt.Println("no redis-server here:", err)
		return
	}
	defer r.Close()
	c := r.Client()
	defer c.Close()
	fmt.Println(c.Ping(context.Background()).Val())
	// Output: PONG
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
