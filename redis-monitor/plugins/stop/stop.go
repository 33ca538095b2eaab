// Package stop is the Redis Monitor's stop plugin (the original's
// StopMonitor): for stop:<spiderid>:<appid>:<crawlid> it blacklists the
// crawl for the spider (<spiderid>:blacklist gets "<appid>||<crawlid>"),
// purges its queued requests from every domain queue of the spider, removes
// the crawl's timeout key and answers with total_purged.
package stop

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/queues"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// Key is the plugin's name in the PLUGINS setting.
const Key = "plugins.stop_monitor.StopMonitor"

func init() { plugin.Register(Key, func() plugin.Plugin { return &Monitor{} }) }

// Monitor stops crawls.
type Monitor struct{ plugin.Base }

// Name is the stats name.
func (*Monitor) Name() string { return "StopMonitor" }

// Pattern matches stop keys.
func (*Monitor) Pattern() string { return "stop:*:*" }

// Handle stops the crawl named by key (value: the request's uuid).
func (m *Monitor) Handle(ctx context.Context, key, value string) error {
	parts := strings.Split(key, ":")
	if len(parts) != 4 {
		return fmt.Errorf("stop key %q: want stop:<spiderid>:<appid>:<crawlid>", key)
	}
	spiderID, appID, crawlID := parts[1], parts[2], parts[3]
	extra := logfactory.Extra{"action": "stop", "appid": appID, "spiderid": spiderID, "uuid": value, "crawlid": crawlID}
	m.Logger.Info("Received stop request", extra)

	purged, err := Halt(ctx, m.Redis, spiderID, appID, crawlID)
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
	answer["success"] = true
	m.Logger.Info("Sent stop ack to kafka", answer)
	return nil
}

// Halt blacklists the crawl for the spider, so crawlers drop its requests
// from now on, then purges its queued requests; it returns how many were
// purged. Stop and expire share it.
func Halt(ctx context.Context, rdb redis.Cmdable, spiderID, appID, crawlID string) (int, error) {
	if err := rdb.SAdd(ctx, rediskeys.BlacklistKey(spiderID), appID+"||"+crawlID).Err(); err != nil {
		return 0, err
	}
	return queues.Purge(ctx, rdb, spiderID, appID, crawlID)
}
