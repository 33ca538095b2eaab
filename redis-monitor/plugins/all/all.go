// Package all registers the Redis Monitor's built-in plugins. Import it for
// its side effect.
package all

import (
	_ "github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/expire"    // ExpireMonitor
	_ "github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/info"      // InfoMonitor
	_ "github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/stats"     // StatsMonitor
	_ "github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/stop"      // StopMonitor
	_ "github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/zookeeper" // ZookeeperMonitor
)
