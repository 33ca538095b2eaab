// Package expire is the Redis Monitor's expire plugin (the original's
// ExpireMonitor): a timeout:<spiderid>:<appid>:<crawlid> key holds the
// epoch time a crawl must end. Until then the key is left alone; after it,
// the crawl is blacklisted and purged as by stop, the key is removed and an
// "expired" notification with total_expired is published. A crawl with a
// ledger is recorded as ended by the expire and its purged requests counted
// (purged:expire), so its crawl-complete, published after the expired
// notification, says "expired".
package expire

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/stop"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// Key is the plugin's name in the PLUGINS setting.
const Key = "plugins.expire_monitor.ExpireMonitor"

func init() { plugin.Register(Key, func() plugin.Plugin { return &Monitor{stop.NewEnder("expire")} }) }

// Monitor expires crawls.
type Monitor struct{ stop.Ender }

// Name is the stats name.
func (*Monitor) Name() string { return "ExpireMonitor" }

// Pattern matches timeout keys.
func (*Monitor) Pattern() string { return "timeout:*:*:*" }

// CheckPrecondition reports whether the expiry time in value has passed.
// A value that is not a number is an error (counted as a failure; the key
// is dropped after the retries).
func (m *Monitor) CheckPrecondition(_ context.Context, key, value string) (bool, error) {
	deadline, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil {
		return false, fmt.Errorf("timeout key %s: value %q is not an epoch time", key, value)
	}
	now := float64(m.Now().UnixNano()) / 1e9
	return now > deadline, nil
}

// Handle expires the crawl named by key.
func (m *Monitor) Handle(ctx context.Context, key, _ string) error {
	crawl, err := stop.CrawlOfKey(key, "timeout:<spiderid>:<appid>:<crawlid>")
	if err != nil {
		return err
	}
	spiderID, appID, crawlID := crawl.SpiderID, crawl.AppID, crawl.CrawlID
	m.Logger.Info("Expiring crawl found", logfactory.Extra{"action": "expire", "appid": appID, "spiderid": spiderID, "crawlid": crawlID})

	expired, err := m.Halt(ctx, crawl, ledger.PurgedExpire)
	if err != nil {
		return err
	}
	answer := map[string]any{
		"action": "expired", "spiderid": spiderID, "appid": appID, "crawlid": crawlID,
		"total_expired": expired, "server_time": m.ServerTime(),
	}
	if err := m.Publish(ctx, answer); err != nil {
		answer["success"] = false
		m.Logger.Error("Failed to send expired ack to kafka", answer)
		return err
	}
	m.Release(ctx, crawl) // the notification is out: the crawl-complete may follow
	answer["success"] = true
	m.Logger.Info("Sent expired ack to kafka", answer)
	return nil
}
