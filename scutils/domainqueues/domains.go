package domainqueues

import (
	"context"
	"encoding/json"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// DomainInfo is one domain queue's share of a crawl's queued requests, as
// the info answer shows it: how many, and the highest and lowest priority
// among them (as queued).
type DomainInfo struct {
	Total        int         `json:"total"`
	HighPriority json.Number `json:"high_priority"`
	LowPriority  json.Number `json:"low_priority"`
	high, low    float64
}

// Add counts one request of priority p.
func (d *DomainInfo) Add(p json.Number) {
	f, err := p.Float64()
	if err != nil { // a request without a numeric priority
		p, f = "0", 0
	}
	if d.Total == 0 || f > d.high {
		d.high, d.HighPriority = f, p
	}
	if d.Total == 0 || f < d.low {
		d.low, d.LowPriority = f, p
	}
	d.Total++
}

// CrawlDomains returns, per domain, what spiderID's queues hold of the
// crawl appID/crawlID (a domain's queue and render queue together), and
// how many requests that is in all.
func CrawlDomains(ctx context.Context, rdb redis.Cmdable, spiderID, appID, crawlID string) (map[string]*DomainInfo, int, error) {
	return CrawlDomainsIn(ctx, rdb, rediskeys.Single, spiderID, appID, crawlID)
}

// CrawlDomainsIn is CrawlDomains over the queues of the key layout l (in
// Cluster, those of every master).
func CrawlDomainsIn(ctx context.Context, rdb redis.Cmdable, l rediskeys.Layout, spiderID, appID, crawlID string) (map[string]*DomainInfo, int, error) {
	domains := map[string]*DomainInfo{}
	pending := 0
	err := ScanIn(ctx, rdb, l, spiderID, func(q Queue) error {
		for _, e := range q.Entries {
			if e.AppID != appID || e.CrawlID != crawlID {
				continue
			}
			d := domains[q.Domain]
			if d == nil {
				d = &DomainInfo{}
				domains[q.Domain] = d
			}
			d.Add(e.Priority)
			pending++
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return domains, pending, nil
}
