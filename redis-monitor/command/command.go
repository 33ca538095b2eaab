// Package command is the redis-monitor command tree. The redis-monitor
// binary is this package plus the built-in plugins; to add plugins of your
// own, build your own binary the same way (see examples/myplugin):
//
//	import (
//		"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/command"
//		_ "github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/all"
//		_ "example.com/you/yourplugin" // registers itself in init()
//		"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
//	)
//
//	func main() { os.Exit(cli.Execute(command.New())) }
//
// and enable the plugin in the PLUGINS setting.
package command

import (
	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/monitor"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
)

// New builds the redis-monitor command tree. Plugins must be registered
// (imported) by the binary.
func New() *cobra.Command {
	declared := monitor.Settings()
	root, flags := cli.NewRoot("redis-monitor",
		"Scrapy Cluster Redis Monitor: answers info, stop, expire, stats and zookeeper requests",
		`The Redis Monitor scans Redis for the request keys the Kafka Monitor writes (info:*, stop:*,
timeout:*, statsrequest:*, zk:*), lets the plugin owning each key act on it (PLUGINS, in rank
order) and publishes the answers to <KAFKA_TOPIC_PREFIX>.outbound_firehose (and, with
KAFKA_APPID_TOPICS, to <KAFKA_TOPIC_PREFIX>.outbound_<appid>).

Run it with no sub-command (or 'run'). Any number of Redis Monitors may run at once: a lock per
request key makes sure each request is handled once. A request whose handling fails is retried
(RETRY_FAILURES, RETRY_FAILURES_MAX) and then dropped with an error line and a fail stat.
SIGINT or SIGTERM lets the request in hand finish (up to SHUTDOWN_GRACE seconds) and exits 0.`,
		declared)
	root.Example = "  redis-monitor\n  redis-monitor --settings localsettings.yaml --log-level DEBUG\n  KAFKA_HOSTS=kafka:9092 REDIS_HOST=redis redis-monitor --set ZOOKEEPER_HOSTS="
	cli.RunsService(root, flags, declared, "Run the Redis Monitor until SIGINT or SIGTERM (the same as no sub-command)", cli.Build(monitor.New))
	return root
}
