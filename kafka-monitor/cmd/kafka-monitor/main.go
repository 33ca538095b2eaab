// Command kafka-monitor: Scrapy Cluster Kafka Monitor: validates requests from Kafka and queues them in Redis.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
)

func main() {
	os.Exit(cli.Execute(newRoot()))
}

// newRoot builds the command tree; main runs it.
func newRoot() *cobra.Command {
	defaults := cli.ComponentDefaults("kafka_monitor.log")
	root, _ := cli.NewRoot("kafka-monitor", "Scrapy Cluster Kafka Monitor: validates requests from Kafka and queues them in Redis", `The Kafka Monitor consumes JSON crawl, action, stats and zookeeper requests from the
incoming Kafka topic, validates them against its plugins' schemas and hands each to its plugin,
which writes it to Redis for the crawlers and the Redis Monitor.

This build has the shared settings machinery only: 'run' and 'feed' arrive with the Kafka Monitor
issue. 'kafka-monitor settings' prints the effective settings.`, defaults)
	return root
}
