// Package stop is the Redis Monitor's stop plugin (the original's
// StopMonitor): for stop:<spiderid>:<appid>:<crawlid> it blacklists the
// crawl for the spider (<spiderid>:blacklist gets "<appid>||<crawlid>"),
// purges its queued requests from every domain queue of the spider, removes
// the crawl's timeout key and answers with total_purged. A crawl with a
// ledger is recorded as ended by the stop and its purged requests counted
// (purged:stop), so its crawl-complete, published after the stop's answer,
// says "stopped". A re-crawl schedule of the crawl ends too: no later run
// starts.
package stop

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainqueues"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/heartbeat"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// Key is the plugin's name in the PLUGINS setting.
const Key = "plugins.stop_monitor.StopMonitor"

func init() { plugin.Register(Key, func() plugin.Plugin { return &Monitor{NewEnder("stop")} }) }

// Monitor stops crawls.
type Monitor struct{ Ender }

// Ender is what the plugins that end crawls (stop, expire) share: the Env
// (plugin.Base) and the id they hold the crawls they end under
// (ledger.EndedBy).
type Ender struct {
	plugin.Base
	holder string
}

// NewEnder is an Ender with a unique holder id for action.
func NewEnder(action string) Ender { return Ender{holder: action + ":" + heartbeat.NewID()} }

// CrawlOfKey reads the crawl a key of form names
// ("stop:<spiderid>:<appid>:<crawlid>").
func CrawlOfKey(key, form string) (ledger.Crawl, error) {
	parts, err := plugin.KeyParts(key, form)
	if err != nil {
		return ledger.Crawl{}, err
	}
	return ledger.Crawl{SpiderID: parts[0], AppID: parts[1], CrawlID: parts[2]}, nil
}

// Halt ends the crawl (the package's Halt), held by e, and returns how many
// of its requests were purged.
func (e *Ender) Halt(ctx context.Context, crawl ledger.Crawl, p ledger.Purge) (int, error) {
	if e.Layout.IsCluster() {
		return HaltCluster(ctx, e.Redis, e.Starter, crawl, p, e.holder, e.Now())
	}
	return Halt(ctx, e.Redis, crawl, p, e.holder, e.Now())
}

// Release lets the crawl-complete of a crawl e ended follow, once e's
// answer is out. A failed release only delays it (the hold lapses after
// HoldFor) and is logged: an error here would answer the request twice.
func (e *Ender) Release(ctx context.Context, crawl ledger.Crawl) {
	release := ledger.Release
	if e.Layout.IsCluster() {
		release = ledger.ReleaseCluster
	}
	if err := release(ctx, e.Redis, crawl, e.holder); err != nil {
		e.Logger.Warning("Could not release the ended crawl; its crawl-complete waits for the hold to lapse", logfactory.Extra{"crawlid": crawl.CrawlID, "error": err.Error()})
	}
}

// Name is the stats name.
func (*Monitor) Name() string { return "StopMonitor" }

// Pattern matches stop keys.
func (*Monitor) Pattern() string { return "stop:*:*" }

// Handle stops the crawl named by key (value: the request's uuid).
func (m *Monitor) Handle(ctx context.Context, key, value string) error {
	crawl, err := CrawlOfKey(key, "stop:<spiderid>:<appid>:<crawlid>")
	if err != nil {
		return err
	}
	spiderID, appID, crawlID := crawl.SpiderID, crawl.AppID, crawl.CrawlID
	extra := logfactory.Extra{"action": "stop", "appid": appID, "spiderid": spiderID, "uuid": value, "crawlid": crawlID}
	m.Logger.Info("Received stop request", extra)

	purged, err := m.Halt(ctx, crawl, ledger.PurgedStop)
	if err != nil {
		return err
	}
	answer := map[string]any{
		"action": "stop", "spiderid": spiderID, "appid": appID, "crawlid": crawlID,
		"total_purged": purged, "uuid": value, "server_time": m.ServerTime(),
	}
	if err := m.Publish(ctx, answer); err != nil {
		extra["success"] = false
		m.Logger.Error("Failed to send stop ack to kafka", extra)
		return err
	}
	// The crawl is over: its expiry has nothing left to do.
	if err := m.Redis.Del(ctx, rediskeys.TimeoutKey(spiderID, appID, crawlID)).Err(); err != nil {
		return err
	}
	m.Release(ctx, crawl) // the answer is out: the crawl-complete may follow
	answer["success"] = true
	m.Logger.Info("Sent stop ack to kafka", answer)
	return nil
}

// HoldFor is how long a stop or an expire keeps completers off the crawl
// it ends while it purges and answers (ledger.EndedBy): the hold of a
// monitor that dies meanwhile lapses after this.
const HoldFor = 30 * time.Second

// Halt blacklists the crawl for the spider, so crawlers drop its requests
// from now on, records in its ledger that p ended it (holding completers off
// it, as holder, until ledger.Release or HoldFor), then purges its queued
// requests; it returns how many were purged. A re-crawl schedule of the
// crawl ends with it (recrawl.Cancel). Stop and expire share it.
func Halt(ctx context.Context, rdb redis.Cmdable, crawl ledger.Crawl, p ledger.Purge, holder string, now time.Time) (int, error) {
	pipe := rdb.TxPipeline()
	pipe.SAdd(ctx, rediskeys.BlacklistKey(crawl.SpiderID), crawl.AppID+"||"+crawl.CrawlID)
	ledger.EndedBy(ctx, pipe, crawl, p, holder, now, now.Add(HoldFor))
	recrawl.Cancel(ctx, pipe, crawl, string(p), recrawl.EndedKeep) // no later run starts
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("blacklist crawl %s of app %s: %w", crawl.CrawlID, crawl.AppID, err)
	}
	return domainqueues.Purge(ctx, rdb, crawl.SpiderID, crawl.AppID, crawl.CrawlID, p, now)
}

// HaltCluster is Halt on a Redis Cluster (rdb a *redis.ClusterClient): the
// crawl is blacklisted (the one Redis's <spiderid>:blacklist, in its own
// slot, which the crawlers read), its end recorded in every one of its
// ledger shares while its completion is held (ledger.EndCluster), and its
// requests purged from the cluster queues of every master, each counted in
// the share of its domain. A re-crawl schedule of the crawl ends with it
// (recrawl.CancelIn: the schedule's slot, the tag {ledger}'s), and a run's
// start in progress is finished first with starter (when not nil), so that
// the end is recorded in the shares of the run it ends.
func HaltCluster(ctx context.Context, rdb redis.Cmdable, starter *recrawl.Starter, crawl ledger.Crawl, p ledger.Purge, holder string, now time.Time) (int, error) {
	cc, err := redisconn.ClusterClient(rdb)
	if err != nil {
		return 0, err
	}
	if err := cc.SAdd(ctx, rediskeys.BlacklistKey(crawl.SpiderID), crawl.AppID+"||"+crawl.CrawlID).Err(); err != nil {
		return 0, fmt.Errorf("blacklist crawl %s of app %s: %w", crawl.CrawlID, crawl.AppID, err)
	}
	pipe := cc.Pipeline()
	recrawl.CancelIn(ctx, pipe, rediskeys.Cluster, crawl, string(p), recrawl.EndedKeep) // no later run starts
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("end the re-crawl schedule of crawl %s: %w", crawl.CrawlID, err)
	}
	if starter != nil {
		if _, err := starter.FinishStart(ctx, crawl); err != nil {
			return 0, err
		}
	}
	if _, err := ledger.EndCluster(ctx, cc, crawl, p, holder, now, now.Add(HoldFor)); err != nil {
		return 0, err
	}
	return domainqueues.PurgeIn(ctx, cc, rediskeys.Cluster, crawl.SpiderID, crawl.AppID, crawl.CrawlID, p, now)
}
