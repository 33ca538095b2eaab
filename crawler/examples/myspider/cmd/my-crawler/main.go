// Command my-crawler is a crawler with the example spider compiled in beside
// the built-in ones: run it with --spider myspider.
package main

import (
	"os"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/command"
	_ "github.com/scrapycluster/scrapy-cluster-go/crawler/examples/myspider"
	_ "github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/all"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
)

func main() { os.Exit(cli.Execute(command.New())) }
