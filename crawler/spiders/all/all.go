// Package all registers the built-in spiders (link, wandering); a crawler
// main imports it for its side effects, as Telegraf's plugins/inputs/all.
package all

import (
	// The built-in spiders register themselves.
	_ "github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/link"
	_ "github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/wandering"
)
