// Package command is the crawler command tree. The crawler binary is this
// package plus the built-in spiders; to add spiders of your own, build your
// own binary the same way (see examples/myspider):
//
//	import (
//		"github.com/scrapycluster/scrapy-cluster-go/crawler/command"
//		_ "github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/all"
//		_ "example.com/you/yourspider" // registers itself in init()
//		"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
//	)
//
//	func main() { os.Exit(cli.Execute(command.New())) }
//
// and run it with --spider <your spider's name>.
package command

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/engine"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/gctune"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// New builds the crawler command tree. Spiders must be registered
// (imported) by the binary.
func New() *cobra.Command {
	declared := engine.Settings()
	root, flags := cli.NewRoot("crawler",
		"Scrapy Cluster crawler: throttled, distributed crawling from Redis queues to Kafka",
		`The crawler serves one spider type (--spider, setting SPIDER; built in: link, wandering). It pops
requests from that spider's Redis domain queues (<spiderid>:<domain>:queue) under each domain's
cluster-wide throttle (QUEUE_HITS per QUEUE_WINDOW, or the domain config in ZooKeeper), fetches
them, lets the spider parse them, queues the links it follows and publishes every page to
<KAFKA_TOPIC_PREFIX>.crawled_firehose (and crawled_<appid> with KAFKA_APPID_TOPICS).

Run as many crawlers as you like, on any machines: they coordinate through Redis. A request is
leased to the crawler that popped it until its page is in Kafka; if that crawler dies, even by
SIGKILL, the others put the request back in its queue within LEASE_TIMEOUT + LEASE_REAP_INTERVAL
seconds. SIGINT or SIGTERM stops taking requests, lets those in flight finish (SHUTDOWN_GRACE),
returns the rest to their queues, flushes Kafka and exits 0.

The crawler's log settings are SC_LOG_* as in the original.`,
		declared)
	flags.SetLogPrefix("SC_")
	root.PersistentFlags().String("spider", "", "the spider type to crawl for: "+strings.Join(spider.Registered(), ", ")+" (setting SPIDER, default link)")
	flags.Bind("spider", "SPIDER")
	root.Example = "  crawler\n  crawler --spider wandering\n  crawler --settings localsettings.yaml --log-level DEBUG\n  KAFKA_HOSTS=kafka:9092 REDIS_HOST=redis crawler --set ZOOKEEPER_HOSTS="
	cli.RunsService(root, flags, declared, "Crawl until SIGINT or SIGTERM (the same as no sub-command)", newEngine)
	return root
}

// newEngine builds the crawler's engine and tunes the garbage collector to
// the memory it may hold.
func newEngine(ctx context.Context, s *settings.Settings, log *logfactory.Logger, rdb redis.UniversalClient) (cli.Service, error) {
	e, err := engine.New(ctx, s, log, rdb)
	if err != nil {
		return nil, err
	}
	gc := gctune.Apply(gctune.DefaultPercent, e.MemoryBound())
	log.Info("Go garbage collector set", logfactory.Extra{"gogc": gc.Percent, "gogc_from_env": gc.PercentFromEnv,
		"memory_limit_bytes": gc.Limit, "memory_limit_from_env": gc.LimitFromEnv})
	return e, nil
}
