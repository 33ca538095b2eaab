// Command rest is the Scrapy Cluster REST service: an HTTP gateway to the
// cluster (/, /feed, /poll) that validates requests with the Kafka
// Monitor's built-in plugin schemas.
package main

import (
	"os"

	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/rest/command"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
)

func main() { os.Exit(cli.Execute(command.New())) }
