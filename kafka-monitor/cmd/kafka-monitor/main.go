// Command kafka-monitor is the Scrapy Cluster Kafka Monitor: `run` validates
// requests from Kafka and stores them in Redis; `feed` sends one request.
package main

import (
	"os"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/command"
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
)

func main() { os.Exit(cli.Execute(command.New())) }
