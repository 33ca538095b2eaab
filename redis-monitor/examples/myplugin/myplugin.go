// Package myplugin is a worked example of a Redis Monitor plugin, the Go
// counterpart of the spec's plugins/my_monitor.py template. It adds an
// action the original does not have: "clear a domain's backlog".
//
// An application (or an operator with redis-cli) writes
//
//	SET clear:<spiderid>:<domain>:<appid> <uuid>
//
// and the plugin deletes the queue <spiderid>:<domain>:queue and answers on
// the outbound topic with
//
//	{"action": "clear", "spiderid", "domain", "appid", "uuid", "total_cleared", "server_time"}
//
// To use it, import this package in your own redis-monitor main (see
// cmd/my-redis-monitor) and enable it in the settings:
//
//	PLUGINS:
//	  myplugin.ClearMonitor: 600
package myplugin

import (
	"context"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// Key is the plugin's name in the PLUGINS setting.
const Key = "myplugin.ClearMonitor"

func init() { plugin.Register(Key, func() plugin.Plugin { return &ClearMonitor{} }) }

// ClearMonitor clears domain queues. plugin.Base provides Setup (keeping
// the Env: Redis, Logger, Publish, Settings), CheckPrecondition (always
// ready) and Close (nothing to release).
type ClearMonitor struct{ plugin.Base }

// Name is the name its stats are kept under: stats:redis-monitor:ClearMonitor:<window>.
func (*ClearMonitor) Name() string { return "ClearMonitor" }

// Pattern is the keys it owns, in SCAN MATCH syntax.
func (*ClearMonitor) Pattern() string { return "clear:*:*:*" }

// Handle clears the queue and answers. Returning an error makes the monitor
// retry the key (RETRY_FAILURES_MAX times); returning nil deletes it.
func (m *ClearMonitor) Handle(ctx context.Context, key, uuid string) error {
	parts, err := plugin.KeyParts(key, "clear:<spiderid>:<domain>:<appid>")
	if err != nil {
		return err
	}
	spiderID, domain, appID := parts[0], parts[1], parts[2]
	queue := rediskeys.QueueKey(spiderID, domain)
	m.Logger.Info("Received clear request", logfactory.Extra{"appid": appID, "uuid": uuid, "queue": queue})

	// Count and delete in one transaction, so nothing queued in between is lost uncounted.
	tx := m.Redis.TxPipeline()
	count := tx.ZCard(ctx, queue)
	tx.Del(ctx, queue)
	if _, err := tx.Exec(ctx); err != nil {
		return err
	}
	return m.Publish(ctx, map[string]any{
		"action": "clear", "spiderid": spiderID, "domain": domain, "appid": appID, "uuid": uuid,
		"total_cleared": count.Val(), "server_time": m.ServerTime(),
	})
}
