// Package scraper is the Kafka Monitor's crawl request plugin (the original's
// ScraperHandler): it queues a valid crawl request in its spider's domain
// queue, sets the crawl's timeout key when it expires, and announces a new
// domain queue to crawlers at once.
package scraper

import (
	"context"
	_ "embed"
	"encoding/json"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
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

// Handler queues crawl requests.
type Handler struct {
	mu        sync.Mutex
	announced map[string]time.Time // queue key -> when its announcement was stored
	pending   map[string]bool      // announced on a pipeline not stored yet
}

// Name is the stats name.
func (h *Handler) Name() string { return "ScraperHandler" }

// Schema is the crawl request schema.
func (h *Handler) Schema() []byte { return schema }

// Setup needs nothing.
func (h *Handler) Setup(context.Context, plugin.Env) error { return nil }

// Handle queues the request at <spiderid>:<domain>:queue with score
// -priority. The member is the request as the original writes it (every
// field the schema has, defaults filled in, keys sorted), read and written
// with the shared crawl request codec, so the Kafka Monitor queues nothing a
// crawler cannot read.
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
	tx.ZAdd(ctx, key, redis.Z{Score: r.Score(), Member: member})
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
// retry announces the queue again.
func (h *Handler) NotStored(req plugin.Request) {
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
