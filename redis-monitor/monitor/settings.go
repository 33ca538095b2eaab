package monitor

import (
	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

// Defaults are the Redis Monitor's settings with their defaults: the spec's
// (names and values as Scrapy Cluster 1.3) plus the shared REDIS_*, KAFKA_*
// and LOG_* settings of every component. Settings this implementation adds
// are marked "(Go)".
//
//	SLEEP_TIME             0.1    seconds between scans for new requests when idle
//	RETRY_FAILURES         true   retry a request whose handling failed
//	RETRY_FAILURES_MAX     3      failed attempts before the request is dropped (with RETRY_FAILURES)
//	HEARTBEAT_TIMEOUT      120    seconds the stats:redis-monitor:self:<host>:<id> key lives; refreshed every timeout/4
//	REDIS_LOCK_EXPIRATION  6      seconds a request's lock outlives a monitor that died holding it
//	KAFKA_APPID_TOPICS     false  also answer on <prefix>.outbound_<appid>
//	ZOOKEEPER_ASSIGN_PATH  "/scrapy-cluster/crawler/"  folder of the domain configuration
//	ZOOKEEPER_ID           "all"  the domain configuration's name in that folder
//	ZOOKEEPER_HOSTS        "localhost:2181"  ZooKeeper; "" keeps the configuration in Redis (Go)
//	PLUGIN_DIR             "plugins/"  accepted for compatibility; plugins are compiled in
//	PLUGINS                the five built-in plugins at ranks 100-500; null disables one
//	LOGGER_NAME            "redis-monitor"
//	LOG_FILE               "redis_monitor.log"
//	STATS_*                stats.MonitorDefaults: STATS_TOTAL, STATS_PLUGINS, STATS_CYCLE, STATS_DUMP, STATS_TIMES
//	STATS_DUMP_CRAWL       true   also dump the crawlers' stats
//	STATS_DUMP_QUEUE       true   also dump the queue backlog
//	SHUTDOWN_GRACE         10     (Go) seconds a request in hand may take to finish after SIGTERM
//	LEDGER_TTL             604800 (Go) seconds a completed crawl's ledger is kept (ledger.Defaults)
//	LEDGER_COMPLETE_INTERVAL 1    (Go) seconds between looks for finished crawls (ledger.Defaults)
//	ADMIN_ADDR, ADMIN_PPROF       (Go) the admin endpoint, ":9411" (admin.Defaults)
//	QUEUE_HITS, QUEUE_WINDOW      (Go) 10 per 60 s: the throttle of a domain the domain configuration does not list, as the crawlers' (for scrapy_redis_monitor_eligible_requests)
func Defaults() settings.Defaults {
	return cli.Merge(cli.ComponentDefaults("redis_monitor.log"), domainconfig.Defaults(), stats.MonitorDefaults(), ledger.Defaults(), admin.Defaults(admin.RedisMonitorAddr), settings.Defaults{
		"SLEEP_TIME":            0.1,
		"RETRY_FAILURES":        true,
		"RETRY_FAILURES_MAX":    3,
		"HEARTBEAT_TIMEOUT":     120,
		"REDIS_LOCK_EXPIRATION": 6,
		"KAFKA_APPID_TOPICS":    false,
		"PLUGIN_DIR":            "plugins/",
		"PLUGINS": map[string]any{
			"plugins.info_monitor.InfoMonitor":           100,
			"plugins.stop_monitor.StopMonitor":           200,
			"plugins.expire_monitor.ExpireMonitor":       300,
			"plugins.stats_monitor.StatsMonitor":         400,
			"plugins.zookeeper_monitor.ZookeeperMonitor": 500,
		},
		"LOGGER_NAME":      "redis-monitor",
		"STATS_DUMP_CRAWL": true,
		"STATS_DUMP_QUEUE": true,
		"SHUTDOWN_GRACE":   10,
		"QUEUE_HITS":       10,
		"QUEUE_WINDOW":     60,
	})
}
