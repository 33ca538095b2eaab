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

// On a Redis Cluster a crawl with a recrawl schedule is queued in run 1
// in its domain's queue and counted in the domain's ledger share (marked
// run 1), its schedule kept under the tag {ledger} with its due entry,
// and its completion marker says a run goes on; the same seed fed again
// is kept and queued once.
func TestScheduledCrawlOnARedisCluster(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	c := rc.TestClient(t)
	h := &scraper.Handler{}
	plugintest.Setup(t, h, c, ledger.Settings(), map[string]any{redisconn.ClusterNodes.Name(): rc.Seeds()})
	for range 2 {
		raw := `{"url":"http://a.com/","appid":"app","crawlid":"c1","recrawl":{"every":60,"emit":"changed"}}`
		if err := plugintest.HandleBatch(t, h, c, []plugin.Request{request(t, raw)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	l := rediskeys.Cluster
	cr := ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "c1"}
	members := c.ZRange(ctx, l.Queue("link", "a.com"), 0, -1).Val()
	if len(members) != 1 {
		t.Fatalf("the queue holds %d requests, want 1", len(members))
	}
	r, err := crawlrequest.Decode([]byte(members[0]))
	if err != nil {
		t.Fatal(err)
	}
	if run, _ := r.Extra("run"); string(run) != "1" {
		t.Errorf("the queued seed's run is %q, want 1", run)
	}
	share := c.HGetAll(ctx, cr.LedgerIn(l, "a.com").Hash).Val()
	if share[ledger.FieldSeeds] != "1" || share[ledger.FieldRun] != "1" {
		t.Errorf("the share is %v, want seeds 1 and run 1", share)
	}
	sched := c.HGetAll(ctx, l.Recrawl("link", "app", "c1")).Val()
	if sched["state"] != "active" || sched["runs_started"] != "1" || sched["emit"] != "changed" || sched["seed:http://a.com/"] == "" {
		t.Errorf("the schedule is %v", sched)
	}
	if c.ZScore(ctx, l.RecrawlDue(), cr.Member()).Err() != nil {
		t.Errorf("%s does not hold the crawl", l.RecrawlDue())
	}
	if got := c.Get(ctx, l.Completed("link", "app", "c1")).Val(); got != "recrawl|0" {
		t.Errorf("the completion marker is %q, want recrawl|0", got)
	}
	if c.Exists(ctx, rediskeys.RecrawlKey("link", "app", "c1"), rediskeys.RecrawlDueKey).Val() != 0 {
		t.Error("the one-Redis schedule keys exist in cluster mode")
	}
}
