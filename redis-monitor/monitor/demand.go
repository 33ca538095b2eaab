package monitor

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// eligibleDesc and eligibleRenderDesc are the throttle-eligible demand
// gauges (docs/metrics.md): what the crawlers without a browser can take
// (the domain queues), and what only rendering crawlers can (the render
// queues).
var (
	eligibleDesc = prometheus.NewDesc("scrapy_redis_monitor_eligible_requests",
		"Requests of each spider type that the domains' throttles would let out in the next minute: every domain queue's "+
			"backlog, capped by its throttle's rate per minute (none for a blacklisted domain). What more crawlers could "+
			"crawl, unlike the raw backlog, which a few throttled domains inflate. Render requests are not counted: "+
			"scrapy_redis_monitor_eligible_render_requests has them.",
		[]string{"spider"}, nil)
	eligibleRenderDesc = prometheus.NewDesc("scrapy_redis_monitor_eligible_render_requests",
		"Render requests of each spider type that the domains' throttles would let out in the next minute: every "+
			"domain's render queue backlog, capped by its throttle's rate per minute. What more rendering crawlers could render.",
		[]string{"spider"}, nil)
)

// demandTimeout bounds the Redis reads of one scrape.
const demandTimeout = 5 * time.Second

// demand computes scrapy_redis_monitor_eligible_requests when Prometheus
// scrapes: the queues' backlog is read then (one SCAN pass, as a queue
// stats request reads it), the domain configuration is the one the
// monitor follows, as the crawlers do.
type demand struct {
	rdb    redis.UniversalClient
	layout rediskeys.Layout
	log    *logfactory.Logger
	// hits per window is the throttle of a domain the configuration does
	// not list: QUEUE_HITS per QUEUE_WINDOW, as the crawlers apply.
	hits   int
	window time.Duration
	// config is the domain configuration; nil until it has been read.
	config atomic.Pointer[domainconfig.Document]
}

// newDemand reads the default throttle (QUEUE_HITS and QUEUE_WINDOW, whose
// declarations bound them as the crawlers need).
func newDemand(s *settings.Settings, rdb redis.UniversalClient, log *logfactory.Logger) *demand {
	return &demand{rdb: rdb, layout: redisconn.KeyLayout(s), log: log, hits: throttle.QueueHits.From(s), window: throttle.QueueWindow.From(s)}
}

// follow keeps config up to date from the domain configuration's store
// until ctx ends; while the store is away the last document stays. Its
// connection trouble is not logged: the zookeeper plugin and /readyz report
// ZooKeeper's, and every log line would come twice.
func (d *demand) follow(ctx context.Context, s *settings.Settings) {
	err := domainconfig.Watch(ctx, s, d.rdb, func(doc domainconfig.Document) { d.config.Store(&doc) })
	if err != nil {
		d.log.Error("Cannot follow the domain configuration; scrapy_redis_monitor_eligible_requests is not reported",
			logfactory.Extra{"error": err.Error()})
	}
}

// Describe implements prometheus.Collector.
func (d *demand) Describe(ch chan<- *prometheus.Desc) {
	ch <- eligibleDesc
	ch <- eligibleRenderDesc
}

// Collect implements prometheus.Collector. Until the domain configuration
// has been read, or while Redis does not answer, there is no value rather
// than a wrong one.
func (d *demand) Collect(ch chan<- prometheus.Metric) {
	doc := d.config.Load()
	if doc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), demandTimeout)
	defer cancel()
	crawlers, queues, err := stats.Reader{Redis: d.rdb, Now: time.Now(), Layout: d.layout}.CrawlersAndQueues(ctx)
	if err != nil {
		d.log.Warning("Cannot read the queues for scrapy_redis_monitor_eligible_requests", logfactory.Extra{"error": err.Error()})
		return
	}
	for spider, n := range EligibleRequests(queues, crawlers, *doc, d.hits, d.window) {
		ch <- prometheus.MustNewConstMetric(eligibleDesc, prometheus.GaugeValue, n.Plain, spider)
		ch <- prometheus.MustNewConstMetric(eligibleRenderDesc, prometheus.GaugeValue, n.Render, spider)
	}
}

// Eligible is one spider type's throttle-eligible demand: Plain, what its
// crawlers can take from the domain queues; Render, what only its rendering
// crawlers can take from the render queues. A domain's throttle caps each
// (rendering crawlers crawl plain requests too, so the two are the demand
// of two pools, not parts of one sum).
type Eligible struct {
	Plain, Render float64
}

// EligibleRequests is, for every spider type with domain queues or
// crawlers running, the requests its domains' throttles would let out in
// the next minute: each domain's backlog, capped by the domain's
// throttle rate, hits × 60 / window seconds, for its queue and its render
// queue apart. A domain's throttle is its entry in the domain
// configuration (hits scaled), or hits per window; a blacklisted domain,
// or one whose hits come to 0, lets out none, as the crawlers apply them
// (crawler/scheduler). The rate is the one a throttle sustains: one of 100
// per hour counts 1.67 a minute, though an empty window lets the 100 out
// at once.
func EligibleRequests(queues *stats.QueueStats, crawlers *stats.CrawlerStats, doc domainconfig.Document, hits int, window time.Duration) map[string]Eligible {
	out := map[string]Eligible{}
	for spider, s := range crawlers.Spiders {
		if s.Running > 0 {
			out[spider] = Eligible{}
		}
	}
	for spider, q := range queues.Spiders {
		var e Eligible
		for _, d := range q.Domains {
			h, w := hits, window.Seconds()
			if c, ok := doc.Domains[d.Domain]; ok {
				h, w = c.ScaledHits(), float64(c.Window)
			}
			if doc.Blacklisted(d.Domain) || h < 1 || w <= 0 {
				continue
			}
			rate := float64(h) * 60 / w
			e.Plain += min(float64(d.Backlog-d.RenderBacklog), rate)
			e.Render += min(float64(d.RenderBacklog), rate)
		}
		out[spider] = e
	}
	return out
}
