package monitor

import (
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
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
//	STATS_TOTAL               true   total and fail counters
//	STATS_PLUGINS             true   a counter per plugin
//	STATS_CYCLE               5      seconds between trims of the stats windows
//	STATS_DUMP                60     seconds between stats dumps to the log; 0 never
//	STATS_TIMES               the windows kept, by StatsCollector name
//	MAX_REQUEST_BYTES         1 MiB  (Go) larger requests are rejected and counted as failures
//	BATCH_SIZE                500    (Go) most requests stored per Redis round trip
func Defaults() settings.Defaults {
	return cli.Merge(cli.ComponentDefaults("kafka_monitor.log"), plugin.Defaults(), settings.Defaults{
		"SLEEP_TIME":           0.01,
		"HEARTBEAT_TIMEOUT":    120,
		"KAFKA_INCOMING_TOPIC": "demo.incoming",
		"KAFKA_GROUP":          "demo-group",
		"KAFKA_FEED_TIMEOUT":   5,
		"PLUGIN_DIR":           "plugins/",
		"LOGGER_NAME":          "kafka-monitor",
		"STATS_TOTAL":          true,
		"STATS_PLUGINS":        true,
		"STATS_CYCLE":          5,
		"STATS_DUMP":           60,
		"STATS_TIMES": []string{
			"SECONDS_15_MINUTE", "SECONDS_1_HOUR", "SECONDS_6_HOUR",
			"SECONDS_12_HOUR", "SECONDS_1_DAY", "SECONDS_1_WEEK",
		},
		"MAX_REQUEST_BYTES": 1 << 20,
		"BATCH_SIZE":        500,
	})
}
