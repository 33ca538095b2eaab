// Package stats is the Redis Monitor's StatsMonitor plugin: it answers the
// Stats API's requests (statsrequest:<stats>:<appid>, value the request's
// uuid) by reading the cluster's stats keys and domain queues from Redis and
// publishing the answer to the outbound topics, in the spec's shapes:
//
//	kafka-monitor, redis-monitor, rest  {"total", "fail", "plugins", "nodes"}
//	spider                              {"spiders": {...}}
//	machine                             {"machines": {...}}
//	queue                               {"queues": {...}}
//	crawler                             {"spiders", "machines", "queue"}
//	all                                 {"kafka-monitor", "redis-monitor", "crawler", "rest"}
//
// plus "stats", "appid", "uuid" and "server_time" at the top level.
//
// The stats are read by scutils/stats.Reader, next to their writers (see
// there how its reads differ from the original's).
package stats

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	scstats "github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

func init() {
	plugin.Register("plugins.stats_monitor.StatsMonitor", func() plugin.Plugin { return &Monitor{} })
}

// Monitor answers stats requests (the original's StatsMonitor).
type Monitor struct {
	plugin.Base
}

var _ plugin.Plugin = (*Monitor)(nil)

// Name is the plugin's stats name.
func (*Monitor) Name() string { return "StatsMonitor" }

// Pattern matches statsrequest:<stats>:<appid>.
func (*Monitor) Pattern() string { return "statsrequest:*:*" }

// Handle gathers the stats the key asks for and publishes the answer. An
// unknown stats type is logged and answered with nothing, as the original
// does; a Redis or Kafka failure is returned so the monitor retries the key.
func (m *Monitor) Handle(ctx context.Context, key, value string) error {
	// The appid is everything after the stats type, colons included (the
	// original keeps only the part up to the next colon).
	_, rest, _ := strings.Cut(key, ":")
	stats, appid, _ := strings.Cut(rest, ":")
	uuid := value

	m.Logger.Info(fmt.Sprintf("Received %s stats request", stats),
		logfactory.Extra{"action": "stats", "appid": appid, "uuid": uuid})

	answer, err := gather(ctx, scstats.Reader{Redis: m.Redis, Now: m.Now(), Layout: m.Layout}, stats)
	if errors.Is(err, errUnknownStats) {
		m.Logger.Warn(fmt.Sprintf("Received invalid stats request: %s", stats),
			logfactory.Extra{"action": "stats", "appid": appid, "uuid": uuid})
		return nil
	}
	if err != nil {
		return fmt.Errorf("gather %s stats for %s: %w", stats, appid, err)
	}
	answer["stats"] = stats
	answer["appid"] = appid
	answer["uuid"] = uuid
	answer["server_time"] = m.ServerTime()

	if err := m.Publish(ctx, answer); err != nil {
		extra := maps.Clone(answer)
		extra["success"] = false
		m.Logger.Error("Failed to send stats to kafka", extra)
		return fmt.Errorf("publish %s stats for %s: %w", stats, appid, err)
	}
	// The whole answer goes into the log line, as in the original: the ELK
	// dashboards chart its fields (total_backlog, total_spider_count, ...).
	if m.Logger.Enabled(logfactory.LevelInfo) {
		extra := maps.Clone(answer)
		extra["success"] = true
		m.Logger.Info("Sent stats to kafka", extra)
	}
	return nil
}

var errUnknownStats = errors.New("unknown stats type")

// gather returns the fields of the answer to a request for stats ("all",
// "kafka-monitor", "spider", ...), without stats, appid, uuid and
// server_time.
func gather(ctx context.Context, r scstats.Reader, stats string) (map[string]any, error) {
	if slices.Contains(scstats.PluginComponents(), stats) {
		c, err := r.Component(ctx, stats)
		if err != nil {
			return nil, err
		}
		return c.Section(), nil
	}
	switch stats {
	case "spider", "machine":
		c, err := r.Crawlers(ctx)
		if err != nil {
			return nil, err
		}
		if stats == "spider" {
			return map[string]any{"spiders": c.SpidersSection()}, nil
		}
		return map[string]any{"machines": c.MachinesSection()}, nil
	case "queue":
		q, err := r.Queues(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"queues": q.Section()}, nil
	case "crawler":
		c, q, err := r.CrawlersAndQueues(ctx)
		if err != nil {
			return nil, err
		}
		return crawlerAnswer(c, q), nil
	case "all":
		cluster, err := r.Cluster(ctx)
		if err != nil {
			return nil, err
		}
		out := map[string]any{"crawler": crawlerAnswer(cluster.Crawlers, cluster.Queues)}
		for name, c := range cluster.Components {
			out[name] = c.Section()
		}
		return out, nil
	}
	return nil, errUnknownStats
}

// crawlerAnswer is the "crawler" stats: spiders, machines and the queue
// backlog. The backlog is under "queue", as the original's Redis Monitor
// sends it and the spec's REST example shows (the Kafka Monitor page's
// example says "queues", which is the key of the "queue" stats answer only).
func crawlerAnswer(c *scstats.CrawlerStats, q *scstats.QueueStats) map[string]any {
	return map[string]any{"spiders": c.SpidersSection(), "machines": c.MachinesSection(), "queue": q.Section()}
}
