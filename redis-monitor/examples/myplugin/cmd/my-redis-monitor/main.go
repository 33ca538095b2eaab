// Command my-redis-monitor is a redis-monitor with the example ClearMonitor
// plugin compiled in: the built-in plugins plus yours, enabled by PLUGINS.
package main

import (
	"os"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/command"
	_ "github.com/scrapycluster/scrapy-cluster-go/redis-monitor/examples/myplugin"
	_ "github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
)

func main() { os.Exit(cli.Execute(command.New())) }
