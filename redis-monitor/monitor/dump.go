package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/stats"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// dumpLoop logs the monitor's stats every STATS_DUMP seconds and, with
// STATS_DUMP_CRAWL and STATS_DUMP_QUEUE, the crawlers' stats and the queue
// backlog, consolidated here so crawlers need not dump their own.
func (m *Monitor) dumpLoop(ctx context.Context, every time.Duration) {
	for lifecycle.Sleep(ctx, every) {
		m.log.Dump("Redis Monitor Stats Dump", m.StatsSnapshot(ctx))
		if m.settings.Bool("STATS_DUMP_CRAWL") {
			if figures, err := CrawlDump(ctx, m); err == nil {
				m.log.Dump("Crawler Stats Dump", figures)
			} else {
				m.log.Warning("Failed to gather crawler stats", logfactory.Extra{"error": err.Error()})
			}
		}
		if m.settings.Bool("STATS_DUMP_QUEUE") {
			if figures, err := QueueDump(ctx, m); err == nil {
				m.log.Dump("Queue Stats Dump", figures)
			} else {
				m.log.Warning("Failed to gather queue stats", logfactory.Extra{"error": err.Error()})
			}
		}
	}
}

// CrawlDump flattens the spider stats as the original's crawl dump does:
// <spider>_<code>_<window> counts, <spider>_spider_count,
// unique_spider_count and total_spider_count.
func CrawlDump(ctx context.Context, m *Monitor) (map[string]any, error) {
	answer, err := gather(ctx, m, "spider")
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	spiders, _ := answer["spiders"].(map[string]any)
	for name, v := range spiders {
		spider, ok := v.(map[string]any)
		if !ok { // unique_spider_count, total_spider_count
			out[name] = v
			continue
		}
		for code, w := range spider {
			if code == "count" {
				out[name+"_spider_count"] = w
				continue
			}
			windows, _ := w.(map[string]any)
			for window, n := range windows {
				out[name+"_"+code+"_"+window] = n
			}
		}
	}
	return out, nil
}

// QueueDump is the queue backlog without the per-domain lists, as the
// original's queue dump: queue_<spider> {spider_backlog, num_domains} and
// total_backlog.
func QueueDump(ctx context.Context, m *Monitor) (map[string]any, error) {
	answer, err := gather(ctx, m, "queue")
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	queues, _ := answer["queues"].(map[string]any)
	for name, v := range queues {
		q, ok := v.(map[string]any)
		if !ok {
			out[name] = v
			continue
		}
		out[name] = map[string]any{"spider_backlog": q["spider_backlog"], "num_domains": q["num_domains"]}
	}
	return out, nil
}

// gather reads a stats answer as its consumers see it: plain JSON values.
func gather(ctx context.Context, m *Monitor, kind string) (map[string]any, error) {
	answer, err := stats.Gather(ctx, m.rdb, time.Now(), kind)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return out, d.Decode(&out)
}
