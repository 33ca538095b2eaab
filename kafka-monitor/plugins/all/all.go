// Package all registers every built-in Kafka Monitor plugin; import it for
// its side effect, as the kafka-monitor command does.
package all

import (
	// The built-in plugins register themselves in init().
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/action"
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/scraper"
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/stats"
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/zookeeper"
)
