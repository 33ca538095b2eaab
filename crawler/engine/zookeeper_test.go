package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// writeDomainConfig changes the crawlers' domain config (the "all" node)
// in z.
func writeDomainConfig(t *testing.T, z *harness.ZooKeeper, change func(d *domainconfig.Document)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store, err := domainconfig.DialZooKeeper(ctx, []string{z.Addr}, "/scrapy-cluster/crawler/all", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Update(ctx, func(d *domainconfig.Document) error { change(d); return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestZooKeeperDomainConfigAppliesLiveAndSurvivesAnOutage: a domain
// throttle written to ZooKeeper reaches a running crawler, and stays in
// force while ZooKeeper is down.
func TestZooKeeperDomainConfigAppliesLiveAndSurvivesAnOutage(t *testing.T) {
	z := harness.StartZooKeeper(t)
	e := newEnv(t, map[string]string{"ZOOKEEPER_HOSTS": z.Addr})
	domain := "127.0.0.1."
	e.seed(t, crawl(e.site.URL("/page/1"), "zk", 0)) // makes the domain known
	writeDomainConfig(t, z, func(d *domainconfig.Document) { d.UpdateDomain(domain, 7, 30, 0.5) })
	harness.WaitFor(t, "the ZooKeeper throttle", 20*time.Second, func() bool {
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

// blacklistedSite is the engine's test site (127.0.0.1) blacklisted in a
// ZooKeeper that is then stopped, so a crawler started now finds no config
// to read; other is a site of another domain, to see the crawler working.
func blacklistedSite(t *testing.T) (z *harness.ZooKeeper, blacklisted string, other *testsite.Site) {
	t.Helper()
	z = harness.StartZooKeeper(t)
	blacklisted = "127.0.0.1."
	writeDomainConfig(t, z, func(d *domainconfig.Document) { d.AddBlacklist(blacklisted) })
	z.Stop()
	return z, blacklisted, testsite.StartAt(t, "127.0.0.2:0")
}

// TestACrawlerPopsNothingUntilItHasItsDomainConfig: a crawler started
// while ZooKeeper is down does not touch a blacklisted domain's queue,
// though it knows the queue, until the config with the blacklist arrives;
// then it crawls other domains and still not that one.
func TestACrawlerPopsNothingUntilItHasItsDomainConfig(t *testing.T) {
	z, blacklisted, other := blacklistedSite(t)
	// Longer than this test may take on a busy machine.
	e := newEnv(t, map[string]string{"ZOOKEEPER_HOSTS": z.Addr, "DOMAIN_CONFIG_WAIT": "600"})
	e.seed(t, crawl(e.site.URL("/page/1"), "bl", 0))
	e.seed(t, crawl(e.site.URL("/page/2"), "bl", 0))
	// The crawler knows the queue (a crawler that did not wait would pop
	// now) and is waiting for its config.
	harness.WaitFor(t, "the crawler to know the queue", 30*time.Second, func() bool { return e.eng.Scheduler().Domains() == 1 })
	harness.WaitFor(t, "the crawler to say it waits", 30*time.Second, func() bool {
		return e.log.Contains("Waiting for the domain config before crawling")
	})

	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	// Generous: ZooKeeper's restart and the crawler's reconnection back-off
	// (up to 10 s) both count here.
	harness.WaitFor(t, "the blacklist", 60*time.Second, func() bool { _, _, blocked := e.eng.Scheduler().Throttle(blacklisted); return blocked })
	e.seed(t, crawl(other.URL("/page/1"), "ok", 0))
	pages := e.pages(t, 1, 30*time.Second)
	if pages[0]["url"] != other.URL("/page/1") {
		t.Errorf("crawled %v, want only the other domain's page", pages[0]["url"])
	}
	if hits := e.site.Hits(); len(hits) != 0 {
		t.Errorf("the blacklisted site was fetched: %v", hits)
	}
	queue := rediskeys.QueueKey("link", blacklisted)
	if n := e.rdb.ZCard(context.Background(), queue).Val(); n != 2 {
		t.Errorf("%s holds %d requests, want the 2 queued: none popped", queue, n)
	}
	if e.log.Contains("may not apply yet") {
		t.Error("the crawler gave up waiting for its config")
	}
}

// TestPastDomainConfigWaitACrawlerStartsWithAnErrorAndAppliesTheConfigLater:
// the wait is bounded; the config still applies when it comes.
func TestPastDomainConfigWaitACrawlerStartsWithAnErrorAndAppliesTheConfigLater(t *testing.T) {
	z, blacklisted, other := blacklistedSite(t)
	e := newEnv(t, map[string]string{"ZOOKEEPER_HOSTS": z.Addr, "DOMAIN_CONFIG_WAIT": "1"})
	e.seed(t, crawl(other.URL("/page/1"), "early", 0))
	pages := e.pages(t, 1, 30*time.Second)
	if pages[0]["url"] != other.URL("/page/1") {
		t.Errorf("crawled %v, want the seeded page", pages[0]["url"])
	}
	line := e.logLine(t, "No domain config within DOMAIN_CONFIG_WAIT")
	if line["level"] != "ERROR" || !strings.Contains(line["message"].(string), "blacklists and domain throttles may not apply yet") ||
		!strings.Contains(line["from"].(string), z.Addr) {
		t.Errorf("log line %v, want an ERROR saying blacklists and throttles may not apply yet, and where the config is", line)
	}

	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "the config once ZooKeeper is back", 60*time.Second, func() bool { return e.log.Contains("The domain config arrived") })
	e.seed(t, crawl(e.site.URL("/page/1"), "late", 0))
	harness.WaitFor(t, "the blacklist to apply to the domain", 30*time.Second, func() bool {
		_, _, blocked := e.eng.Scheduler().Throttle(blacklisted)
		return blocked
	})
}

// TestAFreshClusterWithoutAConfigStartsAtOnce: no config stored yet counts
// as the empty config, whichever the store: the crawler does not wait.
func TestAFreshClusterWithoutAConfigStartsAtOnce(t *testing.T) {
	for _, tt := range []struct {
		name  string
		hosts func(t *testing.T) string
	}{
		{"ZooKeeper without the node", func(t *testing.T) string { return harness.StartZooKeeper(t).Addr }},
		{"Redis without the key", func(*testing.T) string { return "" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Far longer than the test may take: only a crawler that does
			// not wait for it crawls in time.
			e := newEnv(t, map[string]string{"ZOOKEEPER_HOSTS": tt.hosts(t), "DOMAIN_CONFIG_WAIT": "3600"})
			e.seed(t, crawl(e.site.URL("/page/1"), "fresh", 0))
			e.pages(t, 1, 30*time.Second)
			if e.log.Contains("may not apply yet") {
				t.Error("the crawler said it started without its config")
			}
		})
	}
}
