// Package info is the Redis Monitor's info plugin (the original's
// InfoMonitor): it answers info:<spiderid>:<appid> (every crawl of the app)
// and info:<spiderid>:<appid>:<crawlid> (one crawl) with what the spider's
// domain queues hold, in the Action API's shapes, plus (Go) the progress
// of the crawls that have a ledger (scutils/ledger) and the re-crawl
// schedule of a crawl that has one (scutils/recrawl).
package info

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainqueues"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// Key is the plugin's name in the PLUGINS setting.
const Key = "plugins.info_monitor.InfoMonitor"

func init() { plugin.Register(Key, func() plugin.Plugin { return &Monitor{} }) }

// Monitor answers info requests.
type Monitor struct{ plugin.Base }

// Name is the stats name.
func (*Monitor) Name() string { return "InfoMonitor" }

// Pattern matches both info key forms.
func (*Monitor) Pattern() string { return "info:*:*" }

// Handle builds the answer for key (value: the request's uuid) and publishes it.
func (m *Monitor) Handle(ctx context.Context, key, value string) error {
	parts := strings.Split(key, ":")
	if len(parts) != 3 && len(parts) != 4 {
		return fmt.Errorf("info key %q: want info:<spiderid>:<appid>[:<crawlid>]", key)
	}
	spiderID, appID := parts[1], parts[2]
	extra := logfactory.Extra{"action": "info", "appid": appID, "spiderid": spiderID, "uuid": value}
	var (
		answer map[string]any
		err    error
	)
	if len(parts) == 4 {
		extra["crawlid"] = parts[3]
		m.Logger.Info("Received info request", extra)
		answer, err = CrawlInfo(ctx, m.Redis, m.Layout, spiderID, appID, parts[3])
	} else {
		m.Logger.Info("Received info request", extra)
		answer, err = AppInfo(ctx, m.Redis, m.Layout, spiderID, appID)
	}
	if err != nil {
		return err
	}
	answer["uuid"] = value
	answer["server_time"] = m.ServerTime()
	if err := m.Publish(ctx, answer); err != nil {
		extra["success"] = false
		m.Logger.Error("Failed to send info to kafka", extra)
		return err
	}
	extra["success"] = true
	m.Logger.Info("Sent info to kafka", extra)
	return nil
}

// DomainInfo is one domain's share of a crawl's pending requests.
type DomainInfo = domainqueues.DomainInfo

// CrawlSummary is one crawl's pending requests in an appid answer.
type CrawlSummary struct {
	Domains         map[string]*DomainInfo `json:"domains"`
	DistinctDomains int                    `json:"distinct_domains"`
	Total           int                    `json:"total"`
	Expires         json.Number            `json:"expires,omitempty"`
}

// AppInfo is the appid answer without uuid and server_time: total_pending,
// total_domains (distinct over all crawls), total_crawlids and per crawl its
// domains, distinct_domains, total and (when a request carries a non-zero
// one) expires. Crawls with pending requests are all that "crawlids" lists,
// as in the original; the app's crawls of the spider that have a ledger
// (the newest MaxAppProgress of them) get their progress in "progress",
// by crawlid, whether or not requests are pending. Without any, the answer
// has no "progress". l is the key layout: in Cluster the queues and the
// ledger shares of every master are read.
func AppInfo(ctx context.Context, rdb redis.Cmdable, l rediskeys.Layout, spiderID, appID string) (map[string]any, error) {
	crawls := map[string]*CrawlSummary{}
	domains := map[string]bool{}
	pending := 0
	err := domainqueues.ScanIn(ctx, rdb, l, spiderID, func(q domainqueues.Queue) error {
		for _, e := range q.Entries {
			if e.AppID != appID {
				continue
			}
			c := crawls[e.CrawlID]
			if c == nil {
				c = &CrawlSummary{Domains: map[string]*DomainInfo{}}
				if e.Expires != "" && e.Expires != "0" {
					c.Expires = e.Expires
				}
				crawls[e.CrawlID] = c
			}
			d := c.Domains[q.Domain]
			if d == nil {
				d = &DomainInfo{}
				c.Domains[q.Domain] = d
				c.DistinctDomains++
				domains[q.Domain] = true
			}
			d.Add(e.Priority)
			c.Total++
			pending++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	answer := map[string]any{
		"appid": appID, "spiderid": spiderID,
		"total_pending": pending, "total_domains": len(domains), "total_crawlids": len(crawls),
		"crawlids": crawls,
	}
	progress, err := appProgress(ctx, rdb, spiderID, appID)
	if l.IsCluster() {
		progress, err = clusterProgress(ctx, rdb, spiderID, appID, "")
	}
	if err != nil {
		return nil, err
	}
	if len(progress) > 0 {
		answer["progress"] = progress
	}
	return answer, nil
}

// MaxAppProgress bounds how many crawls an appid answer gives the progress
// of (the newest), so that the answer fits a Kafka message.
const MaxAppProgress = 1000

// appProgress is the progress of the app's newest crawls of spiderID, by
// crawlid, from the ledger's index.
func appProgress(ctx context.Context, rdb redis.Cmdable, spiderID, appID string) (map[string]*ledger.Progress, error) {
	const page = 1000
	var crawls []ledger.Crawl
	for start := int64(0); len(crawls) < MaxAppProgress; start += page {
		members, err := rdb.ZRevRange(ctx, rediskeys.LedgerAppCrawlsKey(appID), start, start+page-1).Result()
		if err != nil {
			return nil, fmt.Errorf("list the crawls of app %s: %w", appID, err)
		}
		for _, m := range members {
			if c, err := ledger.ParseMember(m); err == nil && c.SpiderID == spiderID && c.AppID == appID && len(crawls) < MaxAppProgress {
				crawls = append(crawls, c)
			}
		}
		if len(members) < page {
			break
		}
	}
	ps, err := ledger.Read(ctx, rdb, crawls...)
	if err != nil {
		return nil, err
	}
	out := map[string]*ledger.Progress{}
	for i, p := range ps {
		if p != nil { // nil: its ledger expired
			out[crawls[i].CrawlID] = p
		}
	}
	return out, nil
}

// CrawlInfo is the crawlid answer without uuid and server_time:
// total_pending, total_domains, domains, when the crawl has a timeout key
// expires (its value, a string as the original reads it) and, when the
// crawl has a ledger (the original's Kafka Monitor writes none), its
// progress, and when it has a re-crawl schedule, the schedule (recrawl:
// every, runs, runs_started, next_run_at, emit, adaptive, state). l is the
// key layout: in Cluster the queues and the crawl's ledger shares of every
// master are read, and the schedule under the tag {ledger}.
func CrawlInfo(ctx context.Context, rdb redis.Cmdable, l rediskeys.Layout, spiderID, appID, crawlID string) (map[string]any, error) {
	domains, pending, err := domainqueues.CrawlDomainsIn(ctx, rdb, l, spiderID, appID, crawlID)
	if err != nil {
		return nil, err
	}
	answer := map[string]any{
		"appid": appID, "spiderid": spiderID, "crawlid": crawlID,
		"total_pending": pending, "total_domains": len(domains), "domains": domains,
	}
	expires, err := rdb.Get(ctx, rediskeys.TimeoutKey(spiderID, appID, crawlID)).Result()
	switch {
	case err == nil:
		answer["expires"] = expires
	case err != redis.Nil:
		return nil, err
	}
	if l.IsCluster() {
		progress, err := clusterProgress(ctx, rdb, spiderID, appID, crawlID)
		if err != nil {
			return nil, err
		}
		if p := progress[crawlID]; p != nil {
			answer["progress"] = p
		}
	} else {
		progress, err := ledger.Read(ctx, rdb, ledger.Crawl{SpiderID: spiderID, AppID: appID, CrawlID: crawlID})
		if err != nil {
			return nil, err
		}
		if progress[0] != nil {
			answer["progress"] = progress[0]
		}
	}
	schedule, err := recrawl.Read(ctx, rdb, ledger.Crawl{SpiderID: spiderID, AppID: appID, CrawlID: crawlID})
	if err != nil {
		return nil, err
	}
	if schedule != nil {
		answer["recrawl"] = schedule
	}
	return answer, nil
}

// clusterProgress is, on a Redis Cluster, the progress of the app's crawls
// of spiderID (of crawlID alone unless it is ""), summed over their ledger
// shares on every master, by crawlid: the newest MaxAppProgress (by start).
func clusterProgress(ctx context.Context, rdb redis.Cmdable, spiderID, appID, crawlID string) (map[string]*ledger.Progress, error) {
	cc, err := redisconn.ClusterClient(rdb)
	if err != nil {
		return nil, err
	}
	ps, err := ledger.ReadClusterCrawls(ctx, cc, spiderID, appID, crawlID)
	if err != nil {
		return nil, err
	}
	crawls := slices.Collect(maps.Keys(ps))
	slices.SortFunc(crawls, func(a, b ledger.Crawl) int {
		return cmp.Or(cmp.Compare(ps[b].Started, ps[a].Started), strings.Compare(a.CrawlID, b.CrawlID))
	})
	out := map[string]*ledger.Progress{}
	for _, c := range crawls[:min(len(crawls), MaxAppProgress)] {
		out[c.CrawlID] = ps[c]
	}
	return out, nil
}
