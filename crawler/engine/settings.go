package engine

import (
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/referer"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/render"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/session"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

// The engine's own settings: the spec's crawler settings the scheduler and
// the downloader do not read, and ours.
var (
	Spider              = settings.String("SPIDER", "link", "the spider type this process crawls for (`--spider`)").Ours()
	AppIDTopics         = settings.Bool("KAFKA_APPID_TOPICS", false, "also publish to `<prefix>.crawled_<appid>`")
	Base64Encode        = settings.Bool("KAFKA_BASE_64_ENCODE", false, "publish bodies as base64 of the raw bytes")
	StatusCodes         = settings.Bool("STATS_STATUS_CODES", true, "count responses per status code")
	StatusResponseCodes = settings.Ints("STATUS_RESPONSE_CODES", []int{200, 404, 403, 504}, "the codes counted (504 always: requests that got no response count as 504s)")
	ShutdownGrace       = settings.Seconds("SHUTDOWN_GRACE", 10.0, "seconds requests in flight may take to finish after SIGTERM; the rest go back to their queues").Ours()
	DomainConfigWait    = settings.Seconds("DOMAIN_CONFIG_WAIT", 30.0, "seconds a starting crawler waits for its first domain config (blacklist and throttles) before it pops anything; "+
		"none stored yet counts as the empty config, so only an unreachable ZooKeeper (or Redis) makes it wait; past it the crawler starts with an error line "+
		"and applies the config when it comes; 0: no wait").Ours().AtLeast(0)
	MetaRefreshEnabled  = settings.Bool("METAREFRESH_ENABLED", true, "follow a page's `<meta http-equiv=\"refresh\">` as Scrapy's MetaRefreshMiddleware: the target is queued at the page's depth and published under its own URL, the page is not published (ledger `dropped:meta_refresh`)")
	MetaRefreshMaxDelay = settings.Seconds("METAREFRESH_MAXDELAY", 100.0, "the longest meta refresh delay followed, in seconds (a refresh of this delay or longer leaves the page as it is)")
	FollowupsHeldBytes  = settings.Int("FOLLOWUPS_HELD_BYTES", 32<<20, "bytes (estimated) of follow-up requests the requests waiting for Kafka or for their acknowledgement may hold together; "+
		"a worker with a page's follow-ups waits for room (a page with more than this waits until it holds it all), so the crawler takes no more requests while Redis is slow or away "+
		"([requests in hand](crawler.md#requests-in-hand-go)); part of the crawler's memory bound").Ours().Within(64<<10, 1<<30)
	ResultsLinger = settings.Millis("KAFKA_RESULTS_LINGER_MS", 2, "ms a batch of crawl results waits for more results before it is sent to Kafka (each page is acknowledged to Redis only once Kafka has its result, so this is added to a page's time in hand); "+
		"larger batches cost the crawler and the broker less per page ([publishing in batches](crawler.md#publishing-in-batches-go)); 0: send as soon as a sender is free").Ours().Within(0, time.Second)
)

// Settings are the crawler's settings: the scheduler's
// (scheduler.Settings), the downloader's (fetch.Settings), the stats
// windows' (STATS_CYCLE, STATS_TIMES), the crawl ledger's (the crawler
// ignores LEDGER_COMPLETE_INTERVAL), the shared REDIS_*, KAFKA_* and
// ZOOKEEPER_* ones, the log settings as SC_LOG_* (as in the original), the
// admin endpoint's (on :9412), the sessions' (SESSION_TTL), the rendering
// pool's (render.Settings) and the engine's own.
func Settings() settings.Group {
	return settings.Join(
		redisconn.Settings(), kafkaclient.Settings(), domainconfig.Settings(),
		logfactory.Settings("SC_").Group("sc-crawler", "sc_crawler.log"),
		scheduler.Settings(), fetch.Settings(), referer.Settings(), stats.Settings(), ledger.Settings(), recrawl.PageSettings(),
		admin.Settings(admin.CrawlerAddr), session.Settings(),
		settings.Declare(Spider, AppIDTopics, Base64Encode, StatusCodes, StatusResponseCodes, ShutdownGrace, DomainConfigWait,
			MetaRefreshEnabled, MetaRefreshMaxDelay, ResultsLinger, FollowupsHeldBytes, links.MaxPerPage),
		render.Settings())
}
