package engine

import (
	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

// Defaults are the crawler's settings: the spec's crawler settings (names
// and defaults as Scrapy Cluster 1.3; logging is SC_LOG_*), the scheduler's
// (scheduler.Defaults), the downloader's (fetch.Defaults), the stats
// windows' (stats.Defaults: STATS_CYCLE, STATS_TIMES), the crawl ledger's
// (ledger.Defaults: LEDGER_TTL; the crawler ignores LEDGER_COMPLETE_INTERVAL), the shared REDIS_*,
// KAFKA_* and ZOOKEEPER_* settings, and:
//
//	SPIDER                 "link"  (Go) the spider type this process crawls for (--spider)
//	SC_LOGGER_NAME         "sc-crawler"
//	SC_LOG_FILE            "sc_crawler.log" (and SC_LOG_LEVEL, SC_LOG_JSON, SC_LOG_TEXT_FIELDS, SC_LOG_STDOUT, SC_LOG_DIR, SC_LOG_MAX_BYTES, SC_LOG_BACKUPS)
//	KAFKA_APPID_TOPICS     false  also publish to <prefix>.crawled_<appid>
//	KAFKA_BASE_64_ENCODE   false  publish bodies as base64 of the raw bytes
//	STATS_STATUS_CODES     true   count responses per status code
//	STATUS_RESPONSE_CODES  [200, 404, 403, 504]  the codes counted
//	SHUTDOWN_GRACE         10     (Go) seconds in-flight requests may take to finish after SIGTERM; the rest go back to their queues
//	DOMAIN_CONFIG_WAIT     30     (Go) seconds a starting crawler waits for its first domain config before it pops anything; 0 does not wait
//	ADMIN_ADDR, ADMIN_PPROF       (Go) the admin endpoint, ":9412" (admin.Defaults)
func Defaults() settings.Defaults {
	return cli.Merge(
		redisconn.Defaults(), kafkaclient.Defaults(), domainconfig.Defaults(),
		logfactory.PrefixedDefaults("SC_", "sc_crawler.log"),
		scheduler.Defaults(), fetch.Defaults(), stats.Defaults(), ledger.Defaults(), admin.Defaults(admin.CrawlerAddr),
		settings.Defaults{
			"SPIDER":                "link",
			"SC_LOGGER_NAME":        "sc-crawler",
			"KAFKA_APPID_TOPICS":    false,
			"KAFKA_BASE_64_ENCODE":  false,
			"STATS_STATUS_CODES":    true,
			"STATUS_RESPONSE_CODES": []int{200, 404, 403, 504},
			"SHUTDOWN_GRACE":        10.0,
			"DOMAIN_CONFIG_WAIT":    30.0,
		})
}
