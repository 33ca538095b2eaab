// Package engine is the crawler process: it takes requests from the
// scheduler, fetches them, lets the spider parse them, queues the follow-up
// requests, publishes the results and only then acknowledges the request
// (at-least-once: a crawler that dies mid-request leaves it leased, and the
// other crawlers put it back in its queue).
//
// Retries: a request that got no response (timeout, connection error) or a
// 504 is queued again at lower priority up to RETRY_TIMES times, then
// dropped with an error line; a request that can never succeed (invalid URL,
// redirect loop) is dropped with a warning naming the reason
// (fetch.DropReason); one disallowed by robots.txt or for an internal
// address is refused, logged with the ledger's reason ("robots",
// "private_address"). Every
// response, 4xx and 5xx included, is parsed and published, as the original
// does. Response codes are counted in stats:crawler:<host>:<spiderid>:<code>
// (on a Redis Cluster in a hash of time buckets,
// cluster:{<host>}:responses:<spiderid>:<code>) and the process reports
// itself at stats:crawler:<host>:<spiderid>:<id>.
//
// Live domain configuration (blacklist and throttles) comes from ZooKeeper
// (ZOOKEEPER_HOSTS) or from Redis when ZOOKEEPER_HOSTS is empty; while its
// source is unreachable the last good configuration stays in force. A
// starting crawler pops nothing until it has the configuration (none
// stored counts as the empty one), so blacklisted domains are never
// fetched meanwhile; after DOMAIN_CONFIG_WAIT seconds without it, it
// starts anyway with an error line and applies it when it comes.
//
// SIGTERM: no new request is taken; requests in flight get SHUTDOWN_GRACE to
// finish; the rest go back to their queues; the producer is flushed.
package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/crawlspec"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/pipeline"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/referer"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/render"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/scheduler"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/session"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/bytebudget"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/heartbeat"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

// Engine is one crawler process.
type Engine struct {
	settings *settings.Settings
	log      *logfactory.Logger
	rdb      redis.UniversalClient
	spider   spider.Spider
	sched    *scheduler.Scheduler
	fetcher  *fetch.Fetcher
	fetchCfg fetch.Config
	pub      *kafkaclient.Publisher
	pipe     *pipeline.Pipeline
	// resultsHeld bounds the bytes of encoded results waiting for Kafka
	// (kafkaclient.Config.PublishHeldBytes).
	resultsHeld int
	sessions    *session.Store      // the jars of crawls with "session": true
	pool        *render.Pool        // the browsers (RENDER_ENABLED; nil: none)
	extract     crawlspec.Extractor // crawls' extract rules, compiled once

	host, id     string
	retryTimes   int
	grace        time.Duration
	heartbeatTTL time.Duration // twice SCHEDULER_IP_REFRESH, as the original's
	persist      bool          // SCHEDULER_PERSIST

	referer        referer.Referer // REFERER_ENABLED, REFERRER_POLICY
	metaRefresh    bool            // METAREFRESH_ENABLED
	metaRefreshMax time.Duration   // METAREFRESH_MAXDELAY
	maxLinks       int             // MAX_LINKS_PER_PAGE

	configWhere string        // where the domain config lives, for log lines
	configWait  time.Duration // DOMAIN_CONFIG_WAIT
	configReady chan struct{} // closed once the first domain config is applied
	configOnce  sync.Once
	configLate  atomic.Bool // the crawler stopped waiting for it

	layout    rediskeys.Layout // of the keys, by the settings' mode (redisconn.KeyLayout)
	codeStats map[int]codeCounter
	pendingMu sync.Mutex
	pending   map[int]int // response codes not yet written

	counters Counters
	metrics  *metrics

	memory      *recrawl.Memory // scheduled crawls' remembered pages
	adaptiveMax int             // RECRAWL_ADAPTIVE_MAX

	// acking holds a token per request whose results are under way to
	// Kafka (publish) or whose acknowledgement is under way (end), at
	// most tokens(); acks counts them, for Run to wait for.
	acking chan struct{}
	acks   sync.WaitGroup
	// followups bounds the bytes of the follow-up requests those hold
	// (FOLLOWUPS_HELD_BYTES): a worker with a page's follow-ups waits for
	// room before it takes a token.
	followups *bytebudget.Budget
}

// ending is a request whose fate is decided (its result published, or
// dropped), to be acknowledged with tally and its page's follow-up
// requests (reqs, refused; none for a request that was not parsed). It
// holds no body: what it holds is bounded by tokens().
type ending struct {
	item    *scheduler.Item
	tally   *ledger.Tally
	reqs    []*crawlrequest.Request
	refused map[ledger.Reason]int
	held    int // the bytes of followups reqs hold, given back with the token
}

// acknowledgersPerRequest times CONCURRENT_REQUESTS is how many requests
// may wait for their acknowledgement at once (end). An acknowledgement
// waits for its batch to gather (5 ms) and for its round trip, 4 to 10 ms
// in all on a busy machine (a Go execution trace of BenchmarkCrawlCost),
// while a fetch on a fast site takes less: with acknowledgements holding
// the workers of the fetches, as they did, a third of the workers at most
// were fetching and the crawler ran at a third of a core. At 5,000 pages/s
// and 10 ms, 50 requests wait at once; 4 × 16 leave room.
//
// On a Redis Cluster a domain's acknowledgements also wait for each other
// (scheduler.AckLinger, SCHEDULER_CLUSTER_ACK_LINGER_MS, 250 ms by
// default), so each waits that much longer: the bound is as many
// times more as that wait is times acknowledgeTime (at 250 ms, 26 × 4 × 16
// = 1,664), and so covers the same rate. Each holds a request's lease and
// its page's follow-ups, no body.
const acknowledgersPerRequest = 4

// acknowledgeTime is about how long an acknowledgement takes with one
// Redis (its 5 ms batch and its round trip).
const acknowledgeTime = 10 * time.Millisecond

// acknowledgers is how many requests may wait for their acknowledgement
// at once (see acknowledgersPerRequest).
func (e *Engine) acknowledgers() int {
	return acknowledgersPerRequest * e.sched.Concurrency() * (1 + int(e.sched.AckLinger()/acknowledgeTime))
}

// publishersPerRequest times CONCURRENT_REQUESTS is how many requests
// may wait for Kafka's answer to their results at once (publish) besides
// acknowledgers(): a result waits for its batch (KAFKA_RESULTS_LINGER_MS,
// 2 ms) and its round trip, 3 to 5 ms, about half an acknowledgement's
// time. They held a worker each before (Scheduler.MostInHand's third
// CONCURRENT_REQUESTS), at most 2 × CONCURRENT_REQUESTS; what their
// results hold is bounded in bytes by the publisher besides.
const publishersPerRequest = 2

// tokens is how many requests may be past their processing at once,
// their results under way to Kafka or their acknowledgement to Redis
// (acking): a worker with a request to publish or acknowledge waits for
// one.
func (e *Engine) tokens() int {
	return e.acknowledgers() + publishersPerRequest*e.sched.Concurrency()
}

// Counters count what the engine did since start. Dropped counts every
// request or result given up: Refused those of them the fetcher refused
// (an internal address, FETCH_BLOCK_PRIVATE, or robots.txt), TooLarge the
// results that could not fit in a Kafka message even reduced, Unpublished
// those Kafka refused for good. Expired counts requests of expired crawls.
type Counters struct {
	Pages, Published, Retried, Dropped, Expired, ParseErrors, Refused, TooLarge, Unpublished atomic.Int64
}

// New builds a crawler for the spider named by the SPIDER setting.
func New(ctx context.Context, s *settings.Settings, log *logfactory.Logger, rdb redis.UniversalClient) (*Engine, error) {
	var rcfg *render.Config
	if render.Enabled.From(s) {
		c, err := render.ConfigFromSettings(s)
		if err != nil {
			return nil, err
		}
		rcfg = &c
	}
	sp, err := spider.New(Spider.From(s))
	if err != nil {
		return nil, fmt.Errorf("setting %s: %w", Spider.Name(), err)
	}
	scfg, err := scheduler.ConfigFromSettings(s, sp.Name())
	if err != nil {
		return nil, err
	}
	scfg.Render = rcfg != nil
	scfg.Layout = redisconn.KeyLayout(s)
	if scfg.Wait, err = redisconn.NewWaiter(s, log); err != nil {
		return nil, err
	}
	sched, err := scheduler.New(rdb, scfg, log)
	if err != nil {
		return nil, err
	}
	fcfg, err := fetch.ConfigFromSettings(s)
	if err != nil {
		return nil, err
	}
	kcfg, err := kafkaclient.ConfigFromSettings(s)
	if err != nil {
		return nil, err
	}
	configWhere, err := domainconfig.Describe(s)
	if err != nil {
		return nil, err
	}
	ref, err := referer.FromSettings(s)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	kcfg.PublishLinger = ResultsLinger.From(s)
	kcfg.PublishHeldBytes = kcfg.PublishHeldBound() // the results waiting for Kafka (publish)
	pub := kcfg.NewPublisher("crawled", AppIDTopics.From(s), log)
	e := &Engine{
		settings: s, log: log, rdb: rdb, spider: sp, sched: sched,
		fetcher: fetch.New(fcfg), fetchCfg: fcfg, pub: pub, sessions: session.NewStore(rdb, session.TTL.From(s)),
		pipe: pipeline.New(pub, log, Base64Encode.From(s), kcfg.MaxRequestBytes), resultsHeld: kcfg.PublishHeldBytes,
		host: host, id: heartbeat.NewID(), followups: bytebudget.New(FollowupsHeldBytes.From(s)),
		retryTimes: fcfg.RetryTimes, grace: ShutdownGrace.From(s),
		heartbeatTTL: 2 * scfg.IPRefresh, persist: scfg.Persist,
		layout: scfg.Layout, codeStats: map[int]codeCounter{}, pending: map[int]int{},
		configWhere: configWhere, configWait: DomainConfigWait.From(s), configReady: make(chan struct{}),
		referer: ref, metaRefresh: MetaRefreshEnabled.From(s), metaRefreshMax: MetaRefreshMaxDelay.From(s),
		maxLinks: links.MaxPerPage.From(s),
	}
	e.metrics = newMetrics(e)
	e.adaptiveMax = recrawl.AdaptiveMax.From(s)
	e.memory = recrawl.NewMemory(rdb, recrawl.PagesTTL.From(s))
	if err := e.setupStats(ctx); err != nil {
		pub.Close()
		return nil, err
	}
	if rcfg != nil {
		if e.pool, err = render.New(*rcfg, e.fetcher, prometheus.Labels{"spider": sp.Name()}); err != nil {
			e.Close()
			return nil, err
		}
		log.Info("Rendering pages in headless Chromium", logfactory.Extra{"browser": rcfg.Browser,
			"concurrency": rcfg.Concurrency, "recycle": rcfg.Recycle, "block": strings.Join(rcfg.Block, ",")})
	}
	return e, nil
}

func (e *Engine) setupStats(ctx context.Context) error {
	if !StatusCodes.From(e.settings) {
		return nil
	}
	windows := stats.WindowsFromSettings(e.settings, e.log)
	opts := stats.OptionsFromSettings(e.settings, e.log)
	// 504 is always counted: requests that got no response at all count as
	// 504s, as the original's retry middleware counts them.
	codes := StatusResponseCodes.From(e.settings)
	if !slices.Contains(codes, 504) {
		codes = append(codes, 504)
	}
	for _, code := range codes {
		key := e.layout.CrawlerResponses(e.host, e.spider.Name(), strconv.Itoa(code))
		var (
			c   codeCounter
			err error
		)
		if e.layout.ResponseBuckets() {
			c, err = stats.NewBucketSet(ctx, e.rdb, key, windows, opts...)
		} else {
			c, err = stats.NewWindowSet(ctx, e.rdb, key, windows, true, opts...)
		}
		if err != nil {
			return err
		}
		e.codeStats[code] = c
	}
	return nil
}

// codeCounter counts the responses of one status code: the original's
// sorted sets on one Redis (stats.WindowSet), a hash of time buckets on a
// Redis Cluster, or on one Redis with STATS_RESPONSE_BUCKETS
// (stats.BucketSet), whose memory does not grow with the pages crawled
// (docs/redis-cluster.md).
type codeCounter interface {
	AddTo(ctx context.Context, pipe redis.Pipeliner, n int)
	Close() error
}

// MemoryBound is the most memory the crawler should need with its
// settings: the pages being fetched and as many fetched pages being
// processed, each at most DOWNLOAD_MAXSIZE, the encoded results waiting
// for Kafka (at most 3 × KAFKA_PRODUCER_MAX_REQUEST_SIZE, see publish),
// plus 64 MiB for everything else (docs/production.md, hostile pages,
// estimates 30 MB; the rest is room to spare). The crawler command gives
// it to Go's garbage collector as the soft memory limit (package gctune).
func (e *Engine) MemoryBound() int64 {
	c := e.fetcher.Config()
	return 2*int64(c.MaxConns)*c.MaxSize + int64(e.resultsHeld) + int64(e.followups.Max()) + 64<<20
}

// Scheduler returns the engine's scheduler (for tests and benchmarks).
func (e *Engine) Scheduler() *scheduler.Scheduler { return e.sched }

// Counters returns the engine's counters.
func (e *Engine) Counters() *Counters { return &e.counters }

// ID is this process's id in its heartbeat key.
func (e *Engine) ID() string { return e.id }

// Close stops the stats collectors and flushes the producer.
func (e *Engine) Close() {
	if e.pool != nil {
		e.pool.Close() // its browsers, their process groups and profiles
	}
	for _, ws := range e.codeStats {
		ws.Close()
	}
	if err := e.pub.Close(); err != nil {
		e.log.Warning("Failed to close the Kafka producer", logfactory.Extra{"error": err.Error()})
	}
}

// Run crawls until ctx is cancelled, then drains (see the package doc) and
// returns nil.
func (e *Engine) Run(ctx context.Context) error {
	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBackground()
	var background sync.WaitGroup
	background.Go(func() { e.sched.Run(bg) })
	// The original's crawler heartbeat lives twice the IP refresh period.
	background.Go(func() {
		heartbeat.Run(bg, e.rdb, rediskeys.CrawlerHeartbeatKey(e.host, e.spider.Name(), e.id), e.heartbeatTTL, e.log)
	})
	background.Go(func() { e.watchDomainConfig(bg) })
	background.Go(func() { e.statsLoop(bg) })
	defer background.Wait()
	defer stopBackground()

	// work outlives ctx by the grace period, so requests in flight finish.
	work, stopWork := lifecycle.WithGrace(ctx, e.grace)
	defer stopWork()

	e.log.Info("Crawler running", logfactory.Extra{"spiderid": e.spider.Name(), "id": e.id})
	e.awaitDomainConfig(ctx)
	// Fixed pools of goroutines: a goroutine per request grew a fresh stack
	// for every page (runtime.newstack was ~3% of the crawler's CPU in pprof
	// of BenchmarkCrawlCost). The workers, one per request the scheduler
	// lets be in hand at once (being fetched, fetched and being parsed and
	// encoded, or waiting for room for its results: MostInHand), hand
	// each page's results to the producer (publish) or queue the
	// acknowledgement of each request whose fate is decided (end), and
	// take the next: a request waiting for Kafka's answer or for its
	// acknowledgement holds no worker, no slot of the scheduler's and no
	// body, only its lease, its follow-ups and (bounded in bytes) its
	// encoded results.
	e.acking = make(chan struct{}, e.tokens())
	items := make(chan *scheduler.Item)
	var workers sync.WaitGroup
	for range e.sched.MostInHand() {
		workers.Go(func() {
			for item := range items {
				e.handle(work, item)
			}
		})
	}
	for ctx.Err() == nil {
		item, err := e.sched.Next(ctx)
		if err != nil {
			break // ctx cancelled
		}
		items <- item
	}
	close(items)
	// The acknowledgements waiting for others of their domain go now,
	// within the grace period.
	e.sched.HurryAcks()
	e.log.Info("Closing crawler: finishing requests in flight", logfactory.Extra{"in_flight": e.sched.InFlight()})
	workers.Wait()
	e.acks.Wait()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if n, err := e.sched.Release(rctx); err != nil {
		e.log.Error("Failed to return requests to their queues; they return when their leases expire", logfactory.Extra{"error": err.Error()})
	} else if n > 0 {
		e.log.Info("Returned unfinished requests to their queues", logfactory.Extra{"requests": n})
	}
	if !e.persist {
		e.log.Warning("Clearing crawl queues")
		if err := e.sched.Clear(rctx); err != nil {
			e.log.Error("Failed to clear the crawl queues", logfactory.Extra{"error": err.Error()})
		}
	}
	e.flushStats(rctx)
	e.log.Info("Closing Spider", logfactory.Extra{"spiderid": e.spider.Name()})
	return nil
}

// handle crawls one request. Every way out of it ends the request in
// exactly one fate, counted in its crawl's ledger with the acknowledgement
// (or the retry) and logged: published, refused after the pop (expired,
// private_address, robots), dropped (uncrawlable, given up after retries,
// too_large, unpublished, no_result), or queued again for a retry. When
// ctx ends before it finished, the request stays leased and Run releases
// it; nothing is counted.
func (e *Engine) handle(ctx context.Context, item *scheduler.Item) {
	req, crawl := item.Request, item.Crawl()
	tally := &ledger.Tally{}
	e.metrics.inFlight.Inc()
	defer e.metrics.inFlight.Dec()
	extra := logfactory.Extra{"url": req.URL, "appid": req.AppID, "crawlid": req.CrawlID, "spiderid": e.spider.Name()}
	if req.Expired(time.Now()) {
		e.counters.Expired.Add(1)
		tally.RefusedPopped(crawl, ledger.RefusedExpired)
		e.metrics.drop(ledger.RefusedExpired)
		e.log.Info("Crawl expired; request refused", extra)
		e.done(ctx, item, tally)
		return
	}
	if spec, ok, err := req.Render(); ok {
		e.handleRender(ctx, item, spec, err, tally, extra)
		return
	}
	fr := e.freshOf(ctx, req)
	if fr.skip() {
		e.skipFresh(ctx, item, fr, tally, extra)
		return
	}
	freq, jar, ok := e.fetchRequest(ctx, req, extra)
	if !ok {
		return // shutting down: released later
	}
	freq.Validators = fr.validators()
	res, err := e.metrics.fetch(ctx, e.fetcher, freq)
	if jar != nil && !e.untilDone(ctx, "save a crawl's session", func() error { return e.sessions.Save(ctx, jar) }) {
		return
	}
	if !e.fetched(ctx, item, tally, extra, res, err) {
		return
	}
	if e.followMetaRefresh(ctx, item, tally, res, extra) {
		return
	}
	resp := &spider.Response{
		Request: req, URL: res.URL, Status: res.Status, StatusText: res.StatusText,
		Header: res.Header, RequestHeader: res.RequestHeader, Body: res.Body, Truncated: res.Truncated,
		ShareParse: e.extract.ShareParse(req, res.URL), MaxLinks: e.maxLinks,
	}
	var out spider.Output
	if fr.notModified(res) { // unchanged: its remembered links stand for its body
		out = e.remembered(ctx, resp, fr, extra)
	} else {
		out = e.parse(ctx, resp, extra)
		e.extracted(req, out.Pages, extra)
	}
	e.refer(resp, out.Requests)
	e.counters.Pages.Add(1)
	e.observe(ctx, req, fr, res, out)
	if e.noteUnchanged(ctx, item, fr, tally, out) {
		return // withheld (emit "changed"), its follow-ups queued
	}
	e.publish(ctx, item, out, tally, extra)
}

// fetchRequest is what to fetch for req (crawlspec.FetchRequest), with
// its crawl's session loaded when it asks for one (retried while Redis is
// away; false when ctx ended first). Shaping fields that cannot be read
// are logged by name, never their values.
func (e *Engine) fetchRequest(ctx context.Context, req *crawlrequest.Request, extra logfactory.Extra) (fetch.Request, *session.Jar, bool) {
	freq, shape, err := crawlspec.FetchRequest(req)
	if err != nil {
		e.log.Warning("Fetching the request as a plain GET", withError(extra, err))
	}
	freq.Referer = refererOf(req)
	if !shape.Session {
		return freq, nil, true
	}
	var jar *session.Jar
	crawl := session.Crawl{AppID: req.AppID, CrawlID: req.CrawlID, Expires: req.Expires}
	if !e.untilDone(ctx, "load a crawl's session", func() (err error) { jar, err = e.sessions.Load(ctx, crawl); return err }) {
		return freq, nil, false
	}
	freq.Jar = jar
	return freq, jar, true
}

// extracted gives the pages the values of req's extract rules. Rules that
// do not compile (a member no Kafka Monitor of ours checked) are logged and
// the pages published without them.
func (e *Engine) extracted(req *crawlrequest.Request, pages []*spider.Page, extra logfactory.Extra) {
	rules, err := e.extract.Rules(req)
	if err != nil {
		e.log.Warning("The request's extract rules do not compile; published without extracted", withError(extra, err))
		return
	}
	crawlspec.Apply(rules, pages)
}

// withError is extra and the error, in a copy.
func withError(extra logfactory.Extra, err error) logfactory.Extra {
	fields := logfactory.Extra{"error": err.Error()}
	for k, v := range extra {
		fields[k] = v
	}
	return fields
}

// fetched ends a fetch or a render (res, err): the item's fetch slot goes
// to the next request, the answer is counted, and a request that got no
// usable answer is retried or dropped. It reports whether res is a page to
// go on with; when not, the item has its fate (or waits for the drain,
// when shutting down).
func (e *Engine) fetched(ctx context.Context, item *scheduler.Item, tally *ledger.Tally, extra logfactory.Extra, res *fetch.Result, err error) bool {
	if ctx.Err() != nil || e.sched.Fetched(ctx, item) != nil {
		return false // shutting down: released later
	}
	if err != nil {
		e.fetchFailed(ctx, item, tally, extra, err)
		return false
	}
	e.countStatus(res.Status)
	tally.Fetched(item.Crawl(), res.Status)
	if fetch.RetryableStatus(res.Status, e.fetchCfg) {
		extra["status_code"] = res.Status
		e.retry(ctx, item, extra, tally, ledger.Dropped504)
		return false
	}
	return true
}

// fetchFailed retries a request that got no response (as a 504) and drops
// one that cannot be crawled (a refused address, robots.txt, a bad URL).
func (e *Engine) fetchFailed(ctx context.Context, item *scheduler.Item, tally *ledger.Tally, extra logfactory.Extra, err error) {
	crawl := item.Crawl()
	extra["error"] = err.Error()
	if fetch.IsRetryable(err) || render.IsRetryable(err) {
		// As the original: no response counts (and is logged) as a 504.
		e.countStatus(504)
		retryExtra := logfactory.Extra{"error_reason": err.Error(), "retry_count": item.Request.RetryTimes, "status_code": 504}
		for k, v := range extra {
			retryExtra[k] = v
		}
		e.log.Error("Scraper Retry", retryExtra)
		e.retry(ctx, item, extra, tally, noResponseReason(err))
		return
	}
	e.counters.Dropped.Add(1)
	// Logged in the ledger's words: a refusal (private_address, robots)
	// is "refused", anything else that can never be fetched "dropped".
	refused := ledger.RefusedPrivateAddress
	switch {
	case errors.Is(err, fetch.ErrForbiddenAddress):
	case errors.Is(err, fetch.ErrRobotsDisallowed):
		refused = ledger.RefusedRobots
	default:
		if reason := fetch.DropReason(err); reason != "" {
			extra["reason"] = reason // "redirect_loop", "invalid_url", ...
		}
		tally.Dropped(crawl, ledger.DroppedUncrawlable)
		e.metrics.drop(ledger.DroppedUncrawlable)
		e.log.Warning("Request cannot be crawled; dropped", extra)
		e.done(ctx, item, tally)
		return
	}
	extra["reason"] = string(refused)
	e.counters.Refused.Add(1)
	tally.RefusedPopped(crawl, refused)
	e.metrics.drop(refused)
	e.log.Warning("Request refused; not fetched", extra)
	e.done(ctx, item, tally)
}

// publish sends the spider's pages to the crawled topics and, once Kafka
// has them all (published, or given up), acknowledges the request with its
// follow-up requests (finish), having noted in tally what became of it:
// published, dropped with the reason a page could not be sent, or dropped
// because the spider made no page. It does not wait for Kafka: the
// goroutine that reads Kafka's answer to the last page ends it
// (publishing.sent), and the worker takes its next request at once,
// where waiting cost it a wake-up per page. When ctx ends first the
// request stays leased and Run releases it.
//
// It takes a token of acking first, waiting while they are all taken
// (Kafka or Redis slow or away), holding its slots. It takes the pages
// out of out, and lets each go once encoded: once the last is encoded and
// counted in what the producer holds, the item's processing slot goes to
// the next fetched page (Scheduler.Processed). What the results waiting
// for Kafka hold is bounded in bytes by the publisher
// (kafkaclient.Config.PublishHeldBytes: publish waits for room), and
// their number by the tokens.
func (e *Engine) publish(ctx context.Context, item *scheduler.Item, out spider.Output, tally *ledger.Tally, extra logfactory.Extra) {
	held, ok := e.takeToken(ctx, out.Requests)
	if !ok {
		return // shutting down: released later
	}
	e.acks.Add(1)
	e.metrics.inFlight.Inc() // until Kafka's answer (sent)
	pages := out.Pages
	pb := &publishing{e: e, ctx: ctx, item: item, tally: tally, extra: extra, reqs: out.Requests, refused: out.Refused, held: held, start: time.Now()}
	pb.left.Store(int32(len(pages)) + 1) // and this loop's own
	processed := func() { e.sched.Processed(item) }
	for i := range pages {
		page := pages[i]
		pages[i] = nil // nothing but the pipeline keeps it: dead once encoded
		if ctx.Err() != nil {
			pb.sent(false, ctx.Err())
			continue
		}
		var held func()
		if i == len(pages)-1 {
			held = processed
		}
		e.pipe.PublishThen(ctx, e.spider.Name(), page, held, pb.sent)
	}
	pb.pageDone()
}

// publishing is a request's pages under way to Kafka (publish): the last
// answer acknowledges the request (finish) or, when ctx ended, leaves it
// leased for Run to release.
type publishing struct {
	e       *Engine
	ctx     context.Context
	item    *scheduler.Item
	tally   *ledger.Tally
	extra   logfactory.Extra
	reqs    []*crawlrequest.Request
	refused map[ledger.Reason]int
	held    int // the bytes of followups reqs hold
	start   time.Time
	left    atomic.Int32 // pages not answered yet, and publish's loop

	mu        sync.Mutex // the pages' answers may come from two senders
	published int
	cut       bool
	failed    error // a page that cannot ever be sent (logged by the pipeline)
	stopped   bool  // ctx ended first
}

// sent is Kafka's answer (or the pipeline's refusal) for one page.
func (pb *publishing) sent(cut bool, err error) {
	e := pb.e
	e.metrics.published(pb.start, err)
	pb.mu.Lock()
	switch {
	case pb.ctx.Err() != nil:
		pb.stopped = true
	case err != nil:
		e.counters.Dropped.Add(1)
		reason := pipeline.DropReason(err)
		if reason == ledger.DroppedTooLarge {
			e.counters.TooLarge.Add(1)
		} else {
			e.counters.Unpublished.Add(1)
		}
		e.metrics.drop(reason)
		pb.failed = err
	default:
		pb.published++
		pb.cut = pb.cut || cut
		e.counters.Published.Add(1)
	}
	pb.mu.Unlock()
	pb.pageDone()
}

// pageDone counts one answer (or publish's loop); the last ends the
// request.
func (pb *publishing) pageDone() {
	if pb.left.Add(-1) != 0 {
		return
	}
	e, crawl := pb.e, pb.item.Crawl()
	e.metrics.inFlight.Dec()
	switch {
	case pb.stopped:
		e.release(pb.held)
		return
	case pb.published > 0:
		pb.tally.Published(crawl, pb.cut)
	case pb.failed != nil:
		pb.tally.Dropped(crawl, pipeline.DropReason(pb.failed))
	default:
		e.counters.Dropped.Add(1)
		e.log.Warning("The spider made no result of the page; nothing published", pb.extra)
		pb.tally.Dropped(crawl, ledger.DroppedNoResult)
		e.metrics.drop(ledger.DroppedNoResult)
	}
	e.metrics.acknowledging.Inc()
	e.acknowledge(pb.ctx, ending{item: pb.item, tally: pb.tally, reqs: pb.reqs, refused: pb.refused, held: pb.held}, firstBackoff)
}

// finish ends the request's lease with tally and queues the spider's
// follow-up requests, in one step: after the results are out, once
// however often the page is crawled. The acknowledgers do it (see end);
// out's pages are not kept.
func (e *Engine) finish(ctx context.Context, item *scheduler.Item, tally *ledger.Tally, out spider.Output) {
	e.end(ctx, ending{item: item, tally: tally, reqs: out.Requests, refused: out.Refused})
}

// done acknowledges the item with its fate (see end).
func (e *Engine) done(ctx context.Context, item *scheduler.Item, tally *ledger.Tally) {
	e.end(ctx, ending{item: item, tally: tally})
}

// end queues the acknowledgement of a request whose fate is decided
// (acknowledge), once fewer than tokens() are under way: they all
// are when Redis is slow or away, and the workers then wait here, holding
// their slots, and the crawler takes no more requests. When ctx ends
// first, the request stays leased: Run releases it.
func (e *Engine) end(ctx context.Context, end ending) {
	var ok bool
	if end.held, ok = e.takeToken(ctx, end.reqs); !ok {
		return
	}
	e.acks.Add(1)
	e.metrics.acknowledging.Inc()
	e.acknowledge(ctx, end, firstBackoff)
}

// acknowledge ends a request's lease with its tally and queues its
// follow-up requests (Scheduler.FinishThen), without waiting: the
// batch's answer ends it (acknowledged), or, while Redis is away, a
// goroutine tries again after backoff, as untilDone does; when ctx ends
// first the request stays leased and Run releases it.
func (e *Engine) acknowledge(ctx context.Context, end ending, backoff time.Duration) {
	item := end.item
	e.sched.FinishThen(ctx, item, end.tally, end.reqs, end.refused, func(n scheduler.Enqueued, err error) {
		if err == nil || stopping(ctx, err) {
			if err == nil && (len(end.reqs) > 0 || len(end.refused) > 0) && e.log.Enabled(logfactory.LevelDebug) {
				fields := logfactory.Extra{"url": item.Request.URL, "queued": n.Queued}
				for r, c := range n.Refused {
					fields["refused_"+string(r)] = c
				}
				e.log.Debug("Queued follow-up requests", fields)
			}
			e.acknowledged(end.held)
			return
		}
		what := "acknowledge a request"
		if end.reqs != nil || end.refused != nil {
			what = "acknowledge a request and queue its follow-up requests"
		}
		go func() {
			if !e.backOff(ctx, what, err, backoff) {
				e.acknowledged(end.held)
				return
			}
			e.acknowledge(ctx, end, nextBackoff(backoff))
		}()
	})
}

// acknowledged ends an acknowledgement queued by end, done or given up,
// whose follow-ups held held bytes.
func (e *Engine) acknowledged(held int) {
	e.metrics.acknowledging.Dec()
	e.release(held)
}

// takeToken waits for room for reqs' bytes in followups (after the pages
// that asked before), then for a token of acking (end, publish), and
// returns the bytes taken; false when ctx ended first, holding nothing.
func (e *Engine) takeToken(ctx context.Context, reqs []*crawlrequest.Request) (int, bool) {
	var held int
	if n := followupBytes(reqs); n > 0 {
		var err error
		if held, err = e.followups.Take(ctx, n); err != nil {
			return 0, false
		}
	}
	select {
	case e.acking <- struct{}{}:
		return held, true
	case <-ctx.Done():
		if held > 0 {
			e.followups.Give(held)
		}
		return 0, false
	}
}

// followupBytes estimates the memory a page's follow-up requests hold
// until their acknowledgement has queued them (crawlrequest.Request.HeldBytes).
func followupBytes(reqs []*crawlrequest.Request) int {
	var n int
	for _, r := range reqs {
		n += r.HeldBytes()
	}
	return n
}

// release gives back a token of acking and the bytes of followups taken
// with it (takeToken).
func (e *Engine) release(held int) {
	if held > 0 {
		e.followups.Give(held)
	}
	<-e.acking
	e.acks.Done()
}

// noResponseReason is the ledger's reason for giving up a request that got
// no response: a timeout, or a connection that failed.
func noResponseReason(err error) ledger.Reason {
	var netErr net.Error
	if errors.Is(err, fetch.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return ledger.DroppedTimeout
	}
	return ledger.DroppedConnection
}

// parse runs the spider; a panic or an error still publishes the page.
func (e *Engine) parse(ctx context.Context, resp *spider.Response, extra logfactory.Extra) (out spider.Output) {
	defer func() {
		if v := recover(); v != nil {
			e.counters.ParseErrors.Add(1)
			e.log.Error("Spider panicked; publishing the page without following links",
				logfactory.Extra{"url": resp.Request.URL, "crawlid": resp.Request.CrawlID, "panic": fmt.Sprint(v), "stack": string(debug.Stack())})
			out = spider.Output{Pages: []*spider.Page{spider.NewPage(resp)}}
		}
	}()
	out, err := e.spider.Parse(ctx, resp)
	if err != nil {
		e.counters.ParseErrors.Add(1)
		e.log.Warning("Spider could not fully parse the page", withError(extra, err))
		if len(out.Pages) == 0 {
			out.Pages = []*spider.Page{spider.NewPage(resp)}
		}
	}
	e.limitRequests(&out, resp.Request)
	return out
}

// limitRequests holds a page's follow-up requests to MAX_LINKS_PER_PAGE, as
// links.Follow holds the links it follows: a spider that builds its
// requests itself gets its first ones queued and the rest counted in the
// ledger as refused:too_many_links, with a warning, so that no page floods
// the queues whatever the spider.
func (e *Engine) limitRequests(out *spider.Output, req *crawlrequest.Request) {
	over := len(out.Requests) - e.maxLinks
	if e.maxLinks <= 0 || over <= 0 {
		return
	}
	clear(out.Requests[e.maxLinks:]) // garbage now, whatever holds the array
	out.Requests = out.Requests[:e.maxLinks:e.maxLinks]
	if out.Refused == nil {
		out.Refused = map[ledger.Reason]int{}
	}
	out.Refused[ledger.RefusedTooManyLinks] += over
	e.log.Warning("The spider made more follow-up requests than MAX_LINKS_PER_PAGE; the rest are not followed",
		logfactory.Extra{"url": req.URL, "crawlid": req.CrawlID, "requests": e.maxLinks + over, "followed": e.maxLinks})
}

// retry queues the request again with tally and Retried counted, or, after
// RETRY_TIMES retries, drops it for reason.
func (e *Engine) retry(ctx context.Context, item *scheduler.Item, extra logfactory.Extra, tally *ledger.Tally, reason ledger.Reason) {
	req := item.Request
	extra["retry_times"] = req.RetryTimes
	if req.RetryTimes >= e.retryTimes {
		e.counters.Dropped.Add(1)
		extra["reason"] = string(reason)
		tally.Dropped(item.Crawl(), reason)
		e.metrics.drop(reason)
		e.log.Error("Gave up retrying the request; dropped", extra)
		e.done(ctx, item, tally)
		return
	}
	e.counters.Retried.Add(1)
	tally.Retried(item.Crawl())
	e.log.Info("Retrying request", extra)
	e.untilDone(ctx, "queue a retry", func() error { return e.sched.Retry(ctx, item, req.Retry(), tally) })
}

// untilDone retries f with back-off while it fails (Redis away) and
// reports whether it succeeded before ctx ended.
func (e *Engine) untilDone(ctx context.Context, what string, f func() error) bool {
	backoff := firstBackoff
	for {
		err := f()
		if err == nil {
			return true
		}
		if stopping(ctx, err) {
			return false
		}
		if !e.backOff(ctx, what, err, backoff) {
			return false
		}
		backoff = nextBackoff(backoff)
	}
}

// stopping reports whether a call that failed with err is not to be
// tried again because the work is ending (untilDone, acknowledge).
func stopping(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.Canceled)
}

// firstBackoff is the first wait before trying again (untilDone,
// acknowledge); each next one is twice as long, up to 5 s.
const firstBackoff = 100 * time.Millisecond

func nextBackoff(d time.Duration) time.Duration { return min(d*2, 5*time.Second) }

// backOff logs that what failed with err and waits backoff, or until ctx
// ends (false).
func (e *Engine) backOff(ctx context.Context, what string, err error, backoff time.Duration) bool {
	e.log.Error("Failed to "+what+"; retrying", logfactory.Extra{"error": err.Error(), "retry_in": backoff.String()})
	return lifecycle.Sleep(ctx, backoff)
}

// countStatus counts a response code in memory; flushStats writes the
// counts to Redis a few times a second in one round trip, so stats never
// cost a round trip per page.
func (e *Engine) countStatus(code int) {
	if e.codeStats[code] == nil {
		return
	}
	e.pendingMu.Lock()
	e.pending[code]++
	e.pendingMu.Unlock()
}

// flushStats writes the counted response codes.
func (e *Engine) flushStats(ctx context.Context) {
	e.pendingMu.Lock()
	counts := e.pending
	e.pending = map[int]int{}
	e.pendingMu.Unlock()
	if len(counts) == 0 {
		return
	}
	pipe := e.rdb.Pipeline()
	for code, n := range counts {
		e.codeStats[code].AddTo(ctx, pipe, n)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		e.log.Debug("Failed to record response codes", logfactory.Extra{"error": err.Error()})
		e.pendingMu.Lock() // keep them for the next flush
		for code, n := range counts {
			e.pending[code] += n
		}
		e.pendingMu.Unlock()
	}
}

func (e *Engine) statsLoop(ctx context.Context) {
	for lifecycle.Sleep(ctx, statsFlushInterval) {
		e.flushStats(ctx)
	}
}

// statsFlushInterval is how often response codes are written to Redis.
const statsFlushInterval = 250 * time.Millisecond

// awaitDomainConfig waits until the first domain config is applied, so
// that nothing is popped before the blacklist and the domain throttles are
// known, for at most DOMAIN_CONFIG_WAIT (or until ctx ends). A store that
// answers gives it at once, even with no config stored; only an
// unreachable one makes the crawler wait.
func (e *Engine) awaitDomainConfig(ctx context.Context) {
	if e.configWait <= 0 {
		return
	}
	extra := logfactory.Extra{"from": e.configWhere, "wait_seconds": e.configWait.Seconds()}
	// Usually the config comes within milliseconds: say nothing unless
	// it takes a while.
	notice := time.NewTimer(min(time.Second, e.configWait))
	defer notice.Stop()
	limit := time.NewTimer(e.configWait)
	defer limit.Stop()
	for {
		select {
		case <-e.configReady:
			return
		case <-ctx.Done():
			return
		case <-notice.C:
			e.log.Info("Waiting for the domain config before crawling", extra)
		case <-limit.C:
			e.configLate.Store(true)
			e.log.Error("No domain config within DOMAIN_CONFIG_WAIT; crawling without it: blacklists and domain throttles may not apply yet", extra)
			return
		}
	}
}

// watchDomainConfig feeds the live domain configuration to the scheduler
// until ctx ends.
func (e *Engine) watchDomainConfig(ctx context.Context) {
	apply := func(doc domainconfig.Document) {
		e.sched.SetDomainConfig(doc)
		e.log.Info("Domain config changed", logfactory.Extra{"blacklist": doc.Blacklist, "domains": len(doc.Domains)})
		e.configOnce.Do(func() {
			close(e.configReady)
			if e.configLate.Load() {
				e.log.Info("The domain config arrived; blacklists and domain throttles apply from now on", logfactory.Extra{"from": e.configWhere})
			}
		})
	}
	if err := domainconfig.Watch(ctx, e.settings, e.rdb, apply, domainconfig.WithLogger(e.log)); err != nil && ctx.Err() == nil {
		e.log.Error("Cannot watch the domain config", logfactory.Extra{"error": err.Error()})
	}
}
