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

func init() { plugin.Register(Key, func() plugin.Plugin { return &Monitor{} }) }

// Monitor expires crawls.
type Monitor struct {
	plugin.Base
	holder string // this plugin's id as it holds ended crawls (ledger.EndedBy)
}

// Setup keeps env and picks the plugin's holder id.
func (m *Monitor) Setup(ctx context.Context, env plugin.Env) error {
	m.holder = stop.NewHolder("expire")
	return m.Base.Setup(ctx, env)
}

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
	parts := strings.Split(key, ":")
	if len(parts) != 4 {
		return fmt.Errorf("timeout key %q: want timeout:<spiderid>:<appid>:<crawlid>", key)
	}
	spiderID, appID, crawlID := parts[1], parts[2], parts[3]
	extra := logfactory.Extra{"action": "expire", "appid": appID, "spiderid": spiderID, "crawlid": crawlID}
	m.Logger.Info("Expiring crawl found", extra)

	crawl := ledger.Crawl{SpiderID: spiderID, AppID: appID, CrawlID: crawlID}
	expired, err := stop.Halt(ctx, m.Redis, crawl, ledger.PurgedExpire, m.holder, m.Now())
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
	// The notification is out: the crawl-complete may follow.
	// A failed release only delays it: the hold lapses after HoldFor. (An
	// error here would answer the request twice.)
	if err := ledger.Release(ctx, m.Redis, crawl, m.holder); err != nil {
		m.Logger.Warning("Could not release the ended crawl; its crawl-complete waits for the hold to lapse", logfactory.Extra{"crawlid": crawlID, "error": err.Error()})
	}
	answer["success"] = true
	m.Logger.Info("Sent expired ack to kafka", answer)
	return nil
}
