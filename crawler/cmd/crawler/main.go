// Command crawler is the Scrapy Cluster crawler with the built-in spiders
// (link, wandering).
package main

import (
	"os"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/command"
	_ "github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/all"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
)

func main() { os.Exit(cli.Execute(command.New())) }
