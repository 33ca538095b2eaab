// Command redis-monitor: Scrapy Cluster Redis Monitor: answers info, stop, expire, stats and zookeeper requests.
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
	defaults := cli.ComponentDefaults("redis_monitor.log")
	root, _ := cli.NewRoot("redis-monitor", "Scrapy Cluster Redis Monitor: answers info, stop, expire, stats and zookeeper requests", `The Redis Monitor watches Redis for request keys written by the Kafka Monitor, acts on them
(info, stop, expire, stats, zookeeper) and publishes answers to the outbound Kafka topic.

This build has the shared settings machinery only: the monitor loop arrives with the Redis
Monitor issue. 'redis-monitor settings' prints the effective settings.`, defaults)
	return root
}
