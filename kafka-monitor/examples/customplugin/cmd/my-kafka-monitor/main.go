// Command my-kafka-monitor is a Kafka Monitor with the built-in plugins and
// the example NewPlugin: how to build a monitor with plugins of your own.
package main

import (
	"os"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/command"
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/examples/customplugin"
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
)

func main() { os.Exit(cli.Execute(command.New())) }
