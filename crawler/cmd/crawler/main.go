// Command crawler: Scrapy Cluster crawler: throttled, distributed fetching from Redis queues to Kafka.
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
	defaults := cli.ComponentDefaults("sc_crawler.log")
	root, _ := cli.NewRoot("crawler", "Scrapy Cluster crawler: throttled, distributed fetching from Redis queues to Kafka", `The crawler pops requests from Redis per-domain queues under a cluster-wide throttle, fetches
and parses pages, follows links and publishes every page to the crawled firehose topic.

This build has the shared settings machinery only: crawling arrives with the crawler issue.
'crawler settings' prints the effective settings.`, defaults)
	return root
}
