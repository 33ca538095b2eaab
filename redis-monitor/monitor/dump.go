package monitor

import (
	"context"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

// dumpLoop logs the monitor's stats every STATS_DUMP seconds and, with
// STATS_DUMP_CRAWL and STATS_DUMP_QUEUE, the crawlers' stats and the queue
// backlog, consolidated here so crawlers need not dump their own.
func (m *Monitor) dumpLoop(ctx context.Context, every time.Duration) {
	for lifecycle.Sleep(ctx, every) {
		m.log.Dump("Redis Monitor Stats Dump", m.StatsSnapshot(ctx))
		if m.dumpCrawl {
			if figures, err := CrawlDump(ctx, m); err == nil {
				m.log.Dump("Crawler Stats Dump", figures)
			} else {
				m.log.Warning("Failed to gather crawler stats", logfactory.Extra{"error": err.Error()})
			}
		}
		if m.dumpQueue {
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
	crawlers, err := m.statsReader().Crawlers(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]any{
		"unique_spider_count": crawlers.UniqueSpiders(),
		"total_spider_count":  crawlers.Running,
	}
	for name, spider := range crawlers.Spiders {
		out[name+"_spider_count"] = spider.Running
		for code, counts := range spider.Codes {
			for window, n := range counts {
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
	queues, err := m.statsReader().Queues(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"total_backlog": queues.TotalBacklog}
	for spider, q := range queues.Spiders {
		out["queue_"+spider] = map[string]any{"spider_backlog": q.SpiderBacklog, "num_domains": q.NumDomains}
	}
	return out, nil
}

// statsReader reads the cluster's stats as of now.
func (m *Monitor) statsReader() stats.Reader {
	return stats.Reader{Redis: m.rdb, Now: time.Now(), Layout: m.layout}
}
