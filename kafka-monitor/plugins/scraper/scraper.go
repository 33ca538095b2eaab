// Package scraper is the Kafka Monitor's crawl request plugin (the original's
// ScraperHandler): it queues a valid crawl request in its spider's domain
// queue, counting it as a seed in the crawl's ledger in the same step (see
// scutils/ledger), sets the crawl's timeout key when it expires, and
// announces a new domain queue to crawlers at once. A request with a
// recrawl schedule is stored with "run": 1 and makes its crawl's schedule
// in the same step (scutils/recrawl).
package scraper

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

//go:embed scraper_schema.json
var schema []byte

// Key is the plugin's name in the PLUGINS setting.
const Key = "plugins.scraper_handler.ScraperHandler"

// AnnounceInterval is how often one monitor process re-announces a domain
// queue it keeps pushing to; a queue it has not pushed to for this long is
// announced again on its next push.
const AnnounceInterval = 10 * time.Second

func init() { plugin.Register(Key, func() plugin.Plugin { return &Handler{} }) }

// Handler queues crawl requests. It must be Setup before it handles one.
// As a plugin.Batcher it queues all the crawl requests of a pipeline with
// one script (ledger.QueueSeeds).
type Handler struct {
	mu        sync.Mutex
	announced map[string]time.Time // queue key -> when its announcement was stored
	pending   map[string]bool      // announced on a pipeline not stored yet

	ttl    time.Duration    // LEDGER_TTL
	layout rediskeys.Layout // the keys of the Redis mode (REDIS_CLUSTER_NODES)
	// rdb is the monitor's client: on a Redis Cluster a scheduled crawl's
	// seed is kept in its schedule there before its pipeline runs.
	rdb redis.UniversalClient
}

// Name is the stats name.
func (h *Handler) Name() string { return "ScraperHandler" }

// Schema is the crawl request schema.
func (h *Handler) Schema() []byte { return schema }

// Setup reads LEDGER_TTL and the key layout of the Redis mode.
func (h *Handler) Setup(_ context.Context, env plugin.Env) error {
	h.ttl = ledger.TTL.From(env.Settings)
	h.layout = redisconn.KeyLayout(env.Settings)
	h.rdb = env.Redis
	if h.layout.IsCluster() && h.rdb == nil {
		return errors.New("scraper: a Redis Cluster needs the monitor's Redis client (Env.Redis) to keep re-crawl schedules")
	}
	return nil
}

// Handle queues the request at <spiderid>:<domain>:queue (a request with
// render: <spiderid>:<domain>:renderqueue) with score -priority, and counts it as a seed of its crawl's ledger in the same
// script (ledger.QueueSeeds: a request queued already is neither queued
// nor counted again, so a retried batch counts nothing twice). The member
// is the request as the original writes it (every field the schema has,
// defaults filled in, keys sorted), built by the shared crawl request
// codec (crawlrequest.FromFed), so the Kafka Monitor queues nothing a
// crawler cannot read. It is a Batch of one request; the monitor
// handles a pipeline's requests with one Batch (NewBatch).
func (h *Handler) Handle(ctx context.Context, req plugin.Request, tx redis.Pipeliner) (string, error) {
	b := h.NewBatch()
	msg, err := b.Handle(ctx, req, tx)
	if err != nil {
		return "", err
	}
	return msg, b.Flush(ctx, tx)
}

// NewBatch returns a Batch that queues the crawl requests of one pipeline
// with one script, then their timeout keys, then the announcements of new
// queues: each request's queue write precedes its timeout and its
// announcement, as when Handle queues it alone.
func (h *Handler) NewBatch() plugin.Batch { return &batch{h: h} }

// batch is the Handler's plugin.Batch.
type batch struct {
	h     *Handler
	seeds []ledger.Seed
	// scheduled are the seeds of crawls with a recrawl schedule
	// (recrawl.Feed queues each and keeps it in its schedule).
	scheduled []recrawl.Seed
	timeouts  [][2]string // key, value
	announce  [][2]string // channel, queue key
}

// Handle notes the request's writes.
func (b *batch) Handle(_ context.Context, req plugin.Request, _ redis.Pipeliner) (string, error) {
	e, err := b.h.entryOf(req)
	if err != nil {
		return "", err
	}
	if e.schedule != nil {
		b.scheduled = append(b.scheduled, recrawl.Seed{Queue: e.queue, Score: e.score, Member: e.member, Crawl: e.crawl,
			URL: e.url, Domain: e.domain, Spec: *e.schedule, Expires: e.expiresAt})
	} else {
		b.seeds = append(b.seeds, ledger.Seed{Queue: e.queue, Score: e.score, Member: e.member, Crawl: e.crawl, Domain: e.domain})
	}
	if e.timeout {
		b.timeouts = append(b.timeouts, [2]string{rediskeys.TimeoutKey(e.crawl.SpiderID, e.crawl.AppID, e.crawl.CrawlID), e.expires})
	}
	if b.h.announceDue(e.queue) {
		b.announce = append(b.announce, [2]string{rediskeys.QueueChannel(e.crawl.SpiderID), e.queue})
	}
	return "Added crawl to Redis", nil
}

// Flush queues the noted writes on tx.
func (b *batch) Flush(ctx context.Context, tx redis.Pipeliner) error {
	now := time.Now()
	ledger.QueueSeedsIn(ctx, tx, b.h.layout, b.seeds, now, b.h.ttl)
	for _, s := range b.scheduled {
		if !b.h.layout.IsCluster() {
			recrawl.Feed(ctx, tx, s, now, b.h.ttl)
			continue
		}
		// On a Redis Cluster the schedule is kept first, on the monitor's
		// client (its slot is not the seed's); the seed is queued on tx.
		if err := recrawl.FeedCluster(ctx, b.h.rdb, tx, s, now, b.h.ttl); err != nil {
			return err
		}
	}
	for _, t := range b.timeouts {
		tx.Set(ctx, t[0], t[1], 0)
	}
	for _, a := range b.announce {
		tx.Publish(ctx, a[0], a[1])
	}
	return nil
}

// entry is what Handle writes for one request.
type entry struct {
	queue  string // the queue key
	domain string // the URL's domain
	member string
	score  float64
	crawl  ledger.Crawl // the spider is the one fed
	// timeout says the crawl expires: its timeout key holds expires as
	// written, whatever its size.
	timeout bool
	expires string
	// schedule is the crawl's recrawl object, nil without one; url and
	// expiresAt are what the schedule keeps of the seed.
	schedule  *recrawl.Spec
	url       string
	expiresAt float64
}

// entryOf is what Handle writes for req, or the Reject saying why it
// cannot be queued. The member is crawlrequest's stored form of req.
func (h *Handler) entryOf(req plugin.Request) (entry, error) {
	key, spider, domain, err := h.queueKey(req)
	if err != nil {
		return entry{}, plugin.Reject("%v", err)
	}
	spec, scheduled, err := recrawl.FromFed(req)
	if err != nil {
		return entry{}, plugin.Reject("%v", err)
	}
	if scheduled { // stored with "run": 1 beside the fields as fed
		req = maps.Clone(req)
		req[recrawl.FieldRun] = recrawl.FirstRun
	}
	member, r, err := crawlrequest.FromFed(req)
	if err != nil {
		return entry{}, plugin.Reject("%v", err)
	}
	expires, _ := req[crawlrequest.FieldExpires].(json.Number)
	e := entry{
		queue: key, domain: domain, member: member, score: r.Score(),
		crawl:   ledger.Crawl{SpiderID: spider, AppID: r.AppID, CrawlID: r.CrawlID},
		timeout: r.Expires != 0, expires: string(expires),
	}
	if scheduled {
		e.schedule, e.url, e.expiresAt = &spec, r.URL, r.Expires
	}
	return e, nil
}

// queueKey is the request's queue key (in the handler's key layout),
// spider and domain. The spider is the one fed: an empty spiderid names
// the spider "", as the original keys it. A request to be rendered waits
// in its domain's render queue, which only rendering crawlers pop
// (rediskeys.Layout.QueueFor).
func (h *Handler) queueKey(req plugin.Request) (key, spider, domain string, err error) {
	url, _ := req[crawlrequest.FieldURL].(string)
	spider, _ = req[crawlrequest.FieldSpiderID].(string)
	domain, err = rediskeys.DomainOfURL(url)
	if err != nil {
		return "", spider, "", err
	}
	return h.layout.QueueFor(spider, domain, crawlrequest.WantsRender(req)), spider, domain, nil
}

// announceDue reports whether key needs announcing: not announced within
// AnnounceInterval, and no announcement of it waiting to be stored.
func (h *Handler) announceDue(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending[key] {
		return false
	}
	if last, ok := h.announced[key]; ok && time.Since(last) < AnnounceInterval {
		return false
	}
	if h.pending == nil {
		h.pending = map[string]bool{}
	}
	h.pending[key] = true
	return true
}

// NotStored forgets a pending announcement whose write failed, so the
// retry announces the queue again.
func (h *Handler) NotStored(req plugin.Request) {
	if key, ok := h.pendingKey(req); ok {
		h.mu.Lock()
		delete(h.pending, key)
		h.mu.Unlock()
	}
}

// pendingKey is req's queue key, when any announcement is pending (most
// requests are spared the URL parse).
func (h *Handler) pendingKey(req plugin.Request) (string, bool) {
	h.mu.Lock()
	none := len(h.pending) == 0
	h.mu.Unlock()
	if none {
		return "", false
	}
	key, _, _, err := h.queueKey(req)
	return key, err == nil
}

// Stored confirms the announcement of a stored request's queue, if one was pending.
func (h *Handler) Stored(req plugin.Request) {
	key, ok := h.pendingKey(req)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.pending[key] {
		return
	}
	delete(h.pending, key)
	if h.announced == nil {
		h.announced = map[string]time.Time{}
	}
	now := time.Now()
	if len(h.announced) > 10000 {
		for k, t := range h.announced {
			if now.Sub(t) >= AnnounceInterval {
				delete(h.announced, k)
			}
		}
	}
	h.announced[key] = now
}
