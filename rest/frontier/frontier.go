// Package frontier is what the REST service and its console read of the
// crawls and the queues, in the key layout of the settings' mode
// (redisconn.KeyLayout): with the one Redis, the original's keys, read as
// packages ledger and domainqueues read them (the same commands as before);
// on a Redis Cluster (docs/redis-cluster.md), every master: a crawl's
// progress is the sum of its per-domain ledger shares found on every
// master (ledger.ClusterShares, ledger.ReadCluster), the crawls listed are
// those of every domain's index (cluster:{<domain>}:ledger-crawls), the
// active ones those of every domain's active set (ledger.ActiveShares),
// and the queues are the cluster queues of every master. No SCAN of one
// node is taken for the cluster's.
package frontier

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainqueues"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

// Reader reads the frontier through Redis in Layout: a *redis.Client in
// Single, a *redis.ClusterClient in Cluster.
type Reader struct {
	Redis  redis.UniversalClient
	Layout rediskeys.Layout
}

// New is the Reader of rdb in the layout of s's mode.
func New(s *settings.Settings, rdb redis.UniversalClient) Reader {
	return Reader{Redis: rdb, Layout: redisconn.KeyLayout(s)}
}

// Cluster reports whether r reads a Redis Cluster.
func (r Reader) Cluster() bool { return r.Layout.IsCluster() }

// Stats is the stats reader of r at now.
func (r Reader) Stats(now time.Time) stats.Reader {
	return stats.Reader{Redis: r.Redis, Now: now, Layout: r.Layout}
}

// Progress is c's progress (nil: c has no ledger): ledger.Read with the
// one Redis; the sum of its shares on every master in Cluster.
func (r Reader) Progress(ctx context.Context, c ledger.Crawl) (*ledger.Progress, error) {
	if !r.Cluster() {
		p, err := ledger.Read(ctx, r.Redis, c)
		if err != nil {
			return nil, err
		}
		return p[0], nil
	}
	cc, err := redisconn.ClusterClient(r.Redis)
	if err != nil {
		return nil, err
	}
	ps, err := ledger.ReadClusterCrawls(ctx, cc, c.SpiderID, c.AppID, c.CrawlID)
	if err != nil {
		return nil, err
	}
	return ps[c], nil
}

// Domains is domainqueues.CrawlDomains in r's layout: what the spider's
// queues (every master's in Cluster) hold of c, per domain, and in all.
func (r Reader) Domains(ctx context.Context, c ledger.Crawl) (map[string]*domainqueues.DomainInfo, int, error) {
	return domainqueues.CrawlDomainsIn(ctx, r.Redis, r.Layout, c.SpiderID, c.AppID, c.CrawlID)
}

// QueueKeys are the keys of spiderID's domain queues and render queues
// (every master's in Cluster), sorted.
func (r Reader) QueueKeys(ctx context.Context, spiderID string) ([]string, error) {
	return domainqueues.KeysIn(ctx, r.Redis, r.Layout, spiderID)
}

// Schedule is c's re-crawl schedule and its runs (current: c's progress),
// nil when it has none. On a Redis Cluster the schedule is under the tag
// {ledger} and a past run's ledger the sum of its shares
// (ledger.RunsCluster).
func (r Reader) Schedule(ctx context.Context, c ledger.Crawl, current *ledger.Progress) (*recrawl.Info, []ledger.RunEntry, error) {
	info, err := recrawl.Read(ctx, r.Redis, c)
	if err != nil || info == nil {
		return info, nil, err
	}
	if !r.Cluster() {
		runs, err := ledger.Runs(ctx, r.Redis, c, current)
		return info, runs, err
	}
	cc, err := redisconn.ClusterClient(r.Redis)
	if err != nil {
		return nil, nil, err
	}
	runs, err := ledger.RunsCluster(ctx, cc, c, current)
	return info, runs, err
}

// Active is how many crawls are active: the ledger's active set with the
// one Redis; in Cluster the crawls found in any domain's active set.
func (r Reader) Active(ctx context.Context) (int64, error) {
	if !r.Cluster() {
		return r.Redis.ZCard(ctx, rediskeys.LedgerActiveKey).Result()
	}
	cc, err := redisconn.ClusterClient(r.Redis)
	if err != nil {
		return 0, err
	}
	shares, err := ledger.ActiveShares(ctx, cc)
	return int64(len(shares)), err
}

// List is ledger.List in r's layout: crawls with their progress, newest
// first (those of appID, or of every app when appID is ""), skipping
// offset and at most limit of them, with the number of crawls listed in
// all. In Cluster a crawl is listed by the index of each domain it had
// work in, found on every master; its start is its earliest entry there.
func (r Reader) List(ctx context.Context, appID string, offset, limit int) ([]ledger.Entry, int64, error) {
	if !r.Cluster() {
		return ledger.List(ctx, r.Redis, appID, offset, limit)
	}
	if limit <= 0 {
		return nil, 0, fmt.Errorf("list crawls: limit must be positive, got %d", limit)
	}
	cc, err := redisconn.ClusterClient(r.Redis)
	if err != nil {
		return nil, 0, err
	}
	indexed, err := r.indexed(ctx, cc, appID)
	if err != nil {
		return nil, 0, err
	}
	page := indexed[min(offset, len(indexed)):min(offset+limit, len(indexed))]
	progress, err := r.readPage(ctx, cc, page)
	if err != nil {
		return nil, 0, err
	}
	entries := make([]ledger.Entry, 0, len(page))
	pipe := cc.Pipeline()
	gone := 0
	for _, e := range page {
		p := progress[e.crawl]
		if p == nil { // every share expired: drop it from its domains' index
			gone++
			for _, d := range e.domains {
				pipe.ZRem(ctx, r.Layout.LedgerCrawls(d), e.crawl.Member())
				pipe.ZRem(ctx, r.Layout.LedgerAppCrawls(e.crawl.AppID, d), e.crawl.Member())
			}
			continue
		}
		entries = append(entries, ledger.Entry{SpiderID: e.crawl.SpiderID, AppID: e.crawl.AppID, CrawlID: e.crawl.CrawlID, Progress: p})
	}
	if gone > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, 0, fmt.Errorf("drop expired crawls from the index: %w", err)
		}
	}
	return entries, int64(len(indexed) - gone), nil
}

// indexEntry is a crawl of the cluster's ledger index: its earliest score
// in the domains' indexes that hold it, and those domains.
type indexEntry struct {
	crawl   ledger.Crawl
	member  string
	score   float64
	domains []string
}

// indexed reads the ledger index of every domain (of appID's crawls
// only, unless it is "") on every master, newest first as ZREVRANGE
// orders the one Redis's index: by score, then by member.
func (r Reader) indexed(ctx context.Context, cc *redis.ClusterClient, appID string) ([]*indexEntry, error) {
	key := func(domain string) string { return r.Layout.LedgerCrawls(domain) }
	if appID != "" {
		key = func(domain string) string { return r.Layout.LedgerAppCrawls(appID, domain) }
	}
	pattern := r.Layout.LedgerCrawls("*")
	if appID != "" {
		pattern = r.Layout.LedgerAppCrawls(rediskeys.GlobEscape(appID), "*")
	}
	keys, err := redisconn.MasterKeys(ctx, cc, pattern)
	if err != nil {
		return nil, fmt.Errorf("list crawls: %w", err)
	}
	pipe := cc.Pipeline()
	var domains []string
	var cmds []*redis.ZSliceCmd
	for _, k := range keys {
		rest, _ := strings.CutPrefix(k, "cluster:{")
		d, _, _ := strings.Cut(rest, "}")
		if key(d) == k {
			domains = append(domains, d)
			cmds = append(cmds, pipe.ZRangeWithScores(ctx, k, 0, -1))
		}
	}
	if len(cmds) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return nil, fmt.Errorf("list crawls: %w", err)
		}
	}
	byMember := map[string]*indexEntry{}
	for i, cmd := range cmds {
		for _, z := range cmd.Val() {
			m, _ := z.Member.(string)
			e := byMember[m]
			if e == nil {
				c, err := ledger.ParseMember(m)
				if err != nil {
					continue
				}
				e = &indexEntry{crawl: c, member: m, score: z.Score}
				byMember[m] = e
			}
			e.score = min(e.score, z.Score)
			e.domains = append(e.domains, domains[i])
		}
	}
	out := make([]*indexEntry, 0, len(byMember))
	for _, e := range byMember {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *indexEntry) int {
		return cmp.Or(cmp.Compare(b.score, a.score), strings.Compare(b.member, a.member))
	})
	return out, nil
}

// readPage reads the progress of the page's crawls: their shares found on
// every master (one scan per spider and app of the page), summed.
func (r Reader) readPage(ctx context.Context, cc *redis.ClusterClient, page []*indexEntry) (map[ledger.Crawl]*ledger.Progress, error) {
	type app struct{ spider, app string }
	want := map[ledger.Crawl]bool{}
	apps := map[app]bool{}
	for _, e := range page {
		want[e.crawl] = true
		apps[app{e.crawl.SpiderID, e.crawl.AppID}] = true
	}
	shares := map[ledger.Crawl][]string{}
	for a := range apps {
		found, err := ledger.ClusterShares(ctx, cc, a.spider, a.app, "")
		if err != nil {
			return nil, err
		}
		for c, ds := range found {
			if want[c] {
				shares[c] = ds
			}
		}
	}
	return ledger.ReadCluster(ctx, cc, shares)
}
