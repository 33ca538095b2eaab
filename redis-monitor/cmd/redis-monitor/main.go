// Command redis-monitor is the Scrapy Cluster Redis Monitor: it answers
// info, stop, expire, stats and zookeeper requests found in Redis.
package main

import (
	"os"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/command"
	_ "github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
)

func main() { os.Exit(cli.Execute(command.New())) }
