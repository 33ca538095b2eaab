package monitor

import (
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// The Redis Monitor's own settings, names and defaults as the original's
// redis-monitor settings.py; Settings adds the shared ones.
var (
	SleepTime        = settings.Seconds("SLEEP_TIME", 0.1, "seconds between scans for new requests when idle")
	RetryFailures    = settings.Bool("RETRY_FAILURES", true, "retry a request whose handling failed")
	RetryFailuresMax = settings.Int("RETRY_FAILURES_MAX", 3, "failed attempts before the request is dropped (with `RETRY_FAILURES`)")
	HeartbeatTimeout = settings.Seconds("HEARTBEAT_TIMEOUT", 120, "seconds the `stats:redis-monitor:self:<host>:<id>` key lives; refreshed every quarter of it")
	LockExpiration   = settings.Seconds("REDIS_LOCK_EXPIRATION", 6, "seconds a request's lock outlives a monitor that died holding it").Positive()
	AppIDTopics      = settings.Bool("KAFKA_APPID_TOPICS", false, "also answer on `<prefix>.outbound_<appid>`")
	PluginDir        = settings.String("PLUGIN_DIR", "plugins/", "accepted for compatibility; plugins are compiled in")
	DumpCrawl        = settings.Bool("STATS_DUMP_CRAWL", true, "also dump the crawlers' stats with the monitor's (`STATS_DUMP`)")
	DumpQueue        = settings.Bool("STATS_DUMP_QUEUE", true, "also dump the queue backlog with the monitor's stats (`STATS_DUMP`)")
	ShutdownGrace    = settings.Seconds("SHUTDOWN_GRACE", 10, "seconds the request in hand may take to finish after SIGTERM").Ours()
)

// Settings are the Redis Monitor's settings: its own, the shared REDIS_*,
// KAFKA_*, LOG_* and STATS_* ones, the plugins' (plugin.Settings), the
// domain config's place (ZOOKEEPER_*), the ledger's, the re-crawl
// schedules' (RECRAWL_*) and the admin
// endpoint's (on :9411), and the default domain throttle (QUEUE_HITS,
// QUEUE_WINDOW: for scrapy_redis_monitor_eligible_requests).
func Settings() settings.Group {
	return settings.Join(cli.ComponentSettings("redis-monitor", "redis_monitor.log"), domainconfig.Settings(), stats.MonitorSettings(),
		plugin.Settings(), ledger.Settings(), recrawl.Settings(), admin.Settings(admin.RedisMonitorAddr),
		settings.Declare(SleepTime, RetryFailures, RetryFailuresMax, HeartbeatTimeout, LockExpiration, AppIDTopics, PluginDir,
			DumpCrawl, DumpQueue, ShutdownGrace, throttle.QueueHits, throttle.QueueWindow))
}
