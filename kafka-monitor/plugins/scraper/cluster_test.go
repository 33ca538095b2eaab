package scraper_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/scraper"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// On a Redis Cluster, one batch of seeds for 20 domains is queued in each
// domain's hash-tagged queue in the batch's order, counted in the crawl's
// ledger share of that domain with the crawl in the domain's index, and
// the domains' keys spread over the three masters.
func TestBatchQueuesSeedsPerDomainOnARedisCluster(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	c := rc.TestClient(t)
	h := &scraper.Handler{}
	plugintest.Setup(t, h, c, ledger.Settings(), map[string]any{redisconn.ClusterNodes.Name(): rc.Seeds()})
	var reqs []plugin.Request
	for i := range 60 {
		reqs = append(reqs, request(t, fmt.Sprintf(`{"url":"http://d%d.com/p%d","appid":"app","crawlid":"c1","priority":3}`, i%20, i)))
	}
	if err := plugintest.HandleBatch(t, h, c, reqs); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l := rediskeys.Cluster
	cr := ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "c1"}
	masters := map[string]bool{}
	for d := range 20 {
		domain := fmt.Sprintf("d%d.com", d)
		members := c.ZRange(ctx, l.Queue("link", domain), 0, -1).Val()
		if len(members) != 3 {
			t.Fatalf("%s holds %d requests, want 3", l.Queue("link", domain), len(members))
		}
		for j, m := range members {
			r, err := crawlrequest.Decode([]byte(m))
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("http://d%d.com/p%d", d, d+20*j); r.URL != want {
				t.Errorf("%s[%d] is %s, want %s (the batch's order)", domain, j, r.URL, want)
			}
		}
		share := cr.LedgerIn(l, domain)
		if got := c.HGet(ctx, share.Hash, ledger.FieldSeeds).Val(); got != "3" {
			t.Errorf("%s seeds = %q, want 3", share.Hash, got)
		}
		for _, index := range []string{share.Active, share.Crawls, share.AppCrawls} {
			if c.ZScore(ctx, index, cr.Member()).Err() != nil {
				t.Errorf("%s does not hold %s", index, cr.Member())
			}
		}
		masters[rc.MasterOf(t, l.Queue("link", domain)).Addr] = true
		if rc.MasterOf(t, share.Hash) != rc.MasterOf(t, l.Queue("link", domain)) {
			t.Errorf("%s and its queue are on different masters", share.Hash)
		}
	}
	if len(masters) != 3 {
		t.Errorf("the 20 domains' keys are on %d masters, want 3", len(masters))
	}
	for _, key := range []string{rediskeys.QueueKey("link", "d0.com"), cr.Key(), rediskeys.LedgerActiveKey} {
		if n := c.Exists(ctx, key).Val(); n != 0 {
			t.Errorf("the one-Redis key %s exists in cluster mode", key)
		}
	}
}

// A crawl with a recrawl schedule is refused in cluster mode, with a
// reason, and nothing is written.
func TestScheduledCrawlIsRefusedOnARedisCluster(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	c := rc.TestClient(t)
	h := &scraper.Handler{}
	plugintest.Setup(t, h, c, ledger.Settings(), map[string]any{redisconn.ClusterNodes.Name(): rc.Seeds()})
	err := plugintest.Handle(t, h, c, request(t, `{"url":"http://a.com/","appid":"app","crawlid":"c1","recrawl":{"every":60}}`))
	if err == nil {
		t.Fatal("a scheduled crawl was queued in cluster mode")
	}
	t.Log(err)
}
