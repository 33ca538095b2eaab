package monitor

import (
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

// The Kafka Monitor's own settings, names and defaults as the original's
// kafka-monitor settings.py; Settings adds the shared ones.
var (
	SleepTime        = settings.Seconds("SLEEP_TIME", 0.01, "accepted for compatibility; the monitor waits on Kafka instead of polling")
	HeartbeatTimeout = settings.Seconds("HEARTBEAT_TIMEOUT", 120, "seconds the `stats:kafka-monitor:self:<host>:<id>` key lives; refreshed every quarter of it")
	IncomingTopic    = settings.String("KAFKA_INCOMING_TOPIC", "demo.incoming", "the topic requests arrive on")
	ConsumerGroup    = settings.String("KAFKA_GROUP", "demo-group", "consumer group of the monitors")
	FeedTimeout      = settings.Seconds("KAFKA_FEED_TIMEOUT", 5, "seconds `feed` may take")
	PluginDir        = settings.String("PLUGIN_DIR", "plugins/", "accepted for compatibility; plugins are compiled in")
	MaxRequestBytes  = settings.Int("MAX_REQUEST_BYTES", 1<<20, "larger requests are failures (`run`) or refused (`feed`)").Ours()
	BatchSize        = settings.Int("BATCH_SIZE", 1000, "most requests stored per Redis round trip").Ours()
	ReadAheadBytes   = settings.Int("READ_AHEAD_BYTES", 32<<20, "most bytes of requests `run` holds, read from Kafka and not yet stored and reported "+
		"(each counts its size and 512 bytes); a request larger than all of it is read alone ([delivery](kafka-monitor.md#delivery-nothing-lost-nothing-stored-twice))").Ours()
)

// Settings are the Kafka Monitor's settings: its own, the shared REDIS_*,
// KAFKA_*, LOG_* and STATS_* ones, the plugins' (plugin.Settings), the
// ledger's and the admin endpoint's (on :9410).
func Settings() settings.Group {
	return settings.Join(cli.ComponentSettings("kafka-monitor", "kafka_monitor.log"), stats.MonitorSettings(), plugin.Settings(),
		ledger.Settings(), admin.Settings(admin.KafkaMonitorAddr),
		settings.Declare(SleepTime, HeartbeatTimeout, IncomingTopic, ConsumerGroup, FeedTimeout, PluginDir, MaxRequestBytes, BatchSize, ReadAheadBytes))
}
