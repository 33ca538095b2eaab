package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// TestZooKeeperDomainConfigAppliesLiveAndSurvivesAnOutage: a domain
// throttle written to ZooKeeper reaches a running crawler, and stays in
// force while ZooKeeper is down.
func TestZooKeeperDomainConfigAppliesLiveAndSurvivesAnOutage(t *testing.T) {
	z := harness.StartZooKeeper(t)
	e := newEnv(t, map[string]string{"ZOOKEEPER_HOSTS": z.Addr})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store, err := domainconfig.DialZooKeeper(ctx, []string{z.Addr}, "/scrapy-cluster/crawler/all", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	domain := "127.0.0.1."
	e.seed(t, crawl(e.site.URL("/page/1"), "zk", 0)) // makes the domain known
	if err := store.Update(ctx, func(d *domainconfig.Document) error { d.UpdateDomain(domain, 7, 30, 0.5); return nil }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ZooKeeper throttle", 20*time.Second, func() bool {
		hits, window, _ := e.eng.Scheduler().Throttle(domain)
		return hits == 3 && window == 30*time.Second // 7 hits scaled by 0.5, rounded down
	})
	z.Stop()
	e.seed(t, crawl(e.site.URL("/page/2"), "zk", 0))
	e.pages(t, 2, 30*time.Second)
	if hits, window, _ := e.eng.Scheduler().Throttle(domain); hits != 3 || window != 30*time.Second {
		t.Fatalf("throttle %d per %v while ZooKeeper is down; want the last good 3 per 30s", hits, window)
	}
}
