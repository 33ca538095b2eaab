package monitor

import (
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

// Defaults are the Kafka Monitor's settings with their defaults: the spec's
// (names and values as Scrapy Cluster 1.3) plus the shared REDIS_*, KAFKA_*
// and LOG_* settings of every component. Settings this implementation adds
// are marked "(Go)".
//
//	SLEEP_TIME                0.01   accepted for compatibility; this monitor waits on Kafka instead of polling
//	HEARTBEAT_TIMEOUT         120    seconds the stats:kafka-monitor:self:<host>:<id> key lives; refreshed every timeout/4
//	KAFKA_INCOMING_TOPIC      "demo.incoming"
//	KAFKA_GROUP               "demo-group"
//	KAFKA_FEED_TIMEOUT        5      seconds `feed` may take
//	KAFKA_INCOMING_PARTITIONS 6      (Go) partitions when this component creates the incoming topic (plugin.Defaults)
//	PLUGIN_DIR                "plugins/"  accepted for compatibility; plugins are compiled in
//	PLUGINS                   the four built-in plugins at ranks 100-400; null disables one (plugin.Defaults)
//	LOGGER_NAME               "kafka-monitor"
//	LOG_FILE                  "kafka_monitor.log"
//	STATS_*                   stats.MonitorDefaults: STATS_TOTAL, STATS_PLUGINS, STATS_CYCLE, STATS_DUMP, STATS_TIMES
//	MAX_REQUEST_BYTES         1 MiB  (Go) larger requests are rejected and counted as failures
//	BATCH_SIZE                1000   (Go) most requests stored per Redis round trip
//	READ_AHEAD_BYTES          32 MiB (Go) most bytes of requests held, read and not yet stored and reported
//	LEDGER_*                  (Go) ledger.Defaults: LEDGER_TTL, how long a crawl's ledger outlives its last seed
//	ADMIN_ADDR, ADMIN_PPROF          (Go) the admin endpoint of `run`, ":9410" (admin.Defaults)
func Defaults() settings.Defaults {
	return cli.Merge(cli.ComponentDefaults("kafka_monitor.log"), stats.MonitorDefaults(), plugin.Defaults(), ledger.Defaults(), admin.Defaults(admin.KafkaMonitorAddr), settings.Defaults{
		"SLEEP_TIME":           0.01,
		"HEARTBEAT_TIMEOUT":    120,
		"KAFKA_INCOMING_TOPIC": "demo.incoming",
		"KAFKA_GROUP":          "demo-group",
		"KAFKA_FEED_TIMEOUT":   5,
		"PLUGIN_DIR":           "plugins/",
		"LOGGER_NAME":          "kafka-monitor",
		"MAX_REQUEST_BYTES":    1 << 20,
		"BATCH_SIZE":           1000,
		"READ_AHEAD_BYTES":     32 << 20,
	})
}
