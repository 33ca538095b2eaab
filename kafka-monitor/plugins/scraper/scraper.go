// Package scraper is the Kafka Monitor's crawl request plugin (the original's
// ScraperHandler): it queues a valid crawl request in its spider's domain
// queue, counting it as a seed in the crawl's ledger in the same step (see
// scutils/ledger), sets the crawl's timeout key when it expires, and
// announces a new domain queue to crawlers at once.
package scraper

import (
	"context"
	_ "embed"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
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
type Handler struct {
	mu        sync.Mutex
	announced map[string]time.Time // queue key -> when its announcement was stored
	pending   map[string]bool      // announced on a pipeline not stored yet

	rdb *redis.Client
	ttl time.Duration // LEDGER_TTL
	// reload says the ledger's scripts must be loaded before the next
	// write: they could not be at Setup, or a write failed, possibly with
	// NOSCRIPT (Redis restarted without its script cache).
	reload atomic.Bool
}

// Name is the stats name.
func (h *Handler) Name() string { return "ScraperHandler" }

// Schema is the crawl request schema.
func (h *Handler) Schema() []byte { return schema }

// Setup reads LEDGER_TTL and loads the ledger's scripts into Redis. When
// Redis cannot be reached yet, the first request loads them.
func (h *Handler) Setup(ctx context.Context, env plugin.Env) error {
	ttl, err := ledger.TTLFromSettings(env.Settings)
	if err != nil {
		return err
	}
	h.rdb, h.ttl = env.Redis, ttl
	if err := ledger.LoadScripts(ctx, env.Redis); err != nil {
		h.reload.Store(true)
		env.Logger.Warning("Could not load the ledger scripts; the first request will", logfactory.Extra{"error": err.Error()})
	}
	return nil
}

// Handle queues the request at <spiderid>:<domain>:queue with score
// -priority, and counts it as a seed of its crawl's ledger in the same
// script (ledger.QueueSeed: a request queued already is neither queued nor
// counted again, so a retried batch counts nothing twice). The member is
// the request as the original writes it (every field the schema has,
// defaults filled in, keys sorted), read and written with the shared crawl
// request codec, so the Kafka Monitor queues nothing a crawler cannot read.
func (h *Handler) Handle(ctx context.Context, req plugin.Request, tx redis.Pipeliner) (string, error) {
	key, spider, err := queueKey(req)
	if err != nil {
		return "", plugin.Reject("%v", err)
	}
	fed, err := plugin.MarshalPython(req)
	if err != nil {
		return "", plugin.Reject("encode request: %v", err)
	}
	r, err := crawlrequest.Decode(fed)
	if err != nil {
		return "", plugin.Reject("%v", err)
	}
	member, err := r.Encode()
	if err != nil {
		return "", plugin.Reject("encode request: %v", err)
	}
	if h.reload.Load() {
		if err := ledger.LoadScripts(ctx, h.rdb); err != nil {
			return "", err // Redis is away: the monitor retries
		}
		h.reload.Store(false)
	}
	crawl := ledger.Crawl{SpiderID: spider, AppID: r.AppID, CrawlID: r.CrawlID}
	ledger.QueueSeed(ctx, tx, key, r.Score(), string(member), crawl, time.Now(), h.ttl)
	if r.Expires != 0 {
		// The timeout key holds expires as written, whatever its size.
		expires, _ := req[crawlrequest.FieldExpires].(json.Number)
		tx.Set(ctx, rediskeys.TimeoutKey(spider, r.AppID, r.CrawlID), string(expires), 0)
	}
	if h.announceDue(key) {
		tx.Publish(ctx, rediskeys.QueueChannel(spider), key)
	}
	return "Added crawl to Redis", nil
}

// queueKey is the request's queue key and spider. The spider is the one
// fed: an empty spiderid names the spider "", as the original keys it.
func queueKey(req plugin.Request) (key, spider string, err error) {
	url, _ := req[crawlrequest.FieldURL].(string)
	spider, _ = req[crawlrequest.FieldSpiderID].(string)
	key, err = rediskeys.QueueKeyForURL(spider, url)
	return key, spider, err
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
// retry announces the queue again, and has the retry load the ledger's
// scripts first (the write may have failed with NOSCRIPT).
func (h *Handler) NotStored(req plugin.Request) {
	h.reload.Store(true)
	h.mu.Lock()
	none := len(h.pending) == 0
	h.mu.Unlock()
	if none {
		return
	}
	if key, _, err := queueKey(req); err == nil {
		h.mu.Lock()
		delete(h.pending, key)
		h.mu.Unlock()
	}
}

// Stored confirms the announcement of a stored request's queue, if one was pending.
func (h *Handler) Stored(req plugin.Request) {
	h.mu.Lock()
	none := len(h.pending) == 0
	h.mu.Unlock()
	if none {
		return
	}
	key, _, err := queueKey(req)
	if err != nil {
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
