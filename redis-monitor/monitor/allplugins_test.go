package monitor_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// TestEveryDefaultPluginAnswersThroughKafka runs the monitor with its
// default plugins against real Redis, real ZooKeeper and the kfake broker,
// and checks each kind of answer as an application reads it.
func TestEveryDefaultPluginAnswersThroughKafka(t *testing.T) {
	z := harness.StartZooKeeper(t)
	c := newCluster(t)
	ctx := context.Background()
	c.start(t, map[string]string{"PLUGINS": allPlugins, "ZOOKEEPER_HOSTS": z.Addr})

	c.rdb.Set(ctx, "info:link:testapp", "u-info", 0)
	c.rdb.Set(ctx, "stop:link:testapp:c1", "u-stop", 0)
	c.rdb.Set(ctx, "timeout:link:testapp:c2", time.Now().Unix()-1, 0)
	c.rdb.Set(ctx, "statsrequest:redis-monitor:testapp", "u-stats", 0)
	c.rdb.Set(ctx, "zk:blacklist-update:ebay.com:testapp", `{"domain":"ebay.com","uuid":"u-zk"}`, 0)

	byKind := map[string]map[string]any{}
	for _, a := range c.answers(t, "demo.outbound_firehose", 5) {
		kind, _ := a["uuid"].(string)
		if a["action"] == "expired" {
			kind = "expired"
		}
		byKind[kind] = a
	}
	check := func(kind string, want map[string]any) {
		t.Helper()
		got := byKind[kind]
		if got == nil {
			t.Errorf("no %s answer among %v", kind, byKind)
			return
		}
		for k, v := range want {
			if gb, wb := mustJSON(got[k]), mustJSON(v); gb != wb {
				t.Errorf("%s answer: %s = %s, want %s", kind, k, gb, wb)
			}
		}
		if _, ok := got["server_time"].(float64); !ok {
			t.Errorf("%s answer has no server_time: %v", kind, got)
		}
	}
	check("u-info", map[string]any{"appid": "testapp", "spiderid": "link", "total_pending": 0, "total_domains": 0, "total_crawlids": 0, "crawlids": map[string]any{}})
	check("u-stop", map[string]any{"action": "stop", "appid": "testapp", "spiderid": "link", "crawlid": "c1", "total_purged": 0})
	check("expired", map[string]any{"action": "expired", "appid": "testapp", "spiderid": "link", "crawlid": "c2", "total_expired": 0})
	check("u-stats", map[string]any{"stats": "redis-monitor", "appid": "testapp"})
	check("u-zk", map[string]any{"action": "blacklist-update", "domain": "ebay.com", "appid": "testapp"})
	if stats := byKind["u-stats"]; stats != nil {
		if _, ok := stats["plugins"].(map[string]any); !ok {
			t.Errorf("redis-monitor stats without plugins: %v", stats)
		}
		if nodes, _ := stats["nodes"].(map[string]any); len(nodes) != 1 {
			t.Errorf("redis-monitor stats nodes %v, want this monitor", stats["nodes"])
		}
	}

	// The blacklist change is in ZooKeeper, where the crawlers read it.
	data := zkDocument(t, z)
	doc, err := domainconfig.Parse([]byte(data))
	if err != nil || len(doc.Blacklist) != 1 || doc.Blacklist[0] != "ebay.com" {
		t.Fatalf("zookeeper document %q: %+v, %v", data, doc, err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestZooKeeperIsNotNeededToStartOrToAnswerTheOtherRequests: with ZooKeeper
// down the monitor starts and answers info and stats; a domain-update waits
// in Redis, neither answered nor counted as a failure, and is answered
// without an error once ZooKeeper is back, when the document holds it. A
// 10 s outage while running writes a bounded number of log lines (one per
// reconnection attempt, with back-off, not one a second).
func TestZooKeeperIsNotNeededToStartOrToAnswerTheOtherRequests(t *testing.T) {
	z := harness.StartZooKeeper(t)
	z.Stop()
	c := newCluster(t)
	ctx := context.Background()
	r := c.start(t, map[string]string{"PLUGINS": allPlugins, "ZOOKEEPER_HOSTS": z.Addr, "RETRY_FAILURES_MAX": "1"})

	const update1 = "zk:domain-update:dmoz.org:testapp"
	c.rdb.Set(ctx, update1, `{"domain":"dmoz.org","uuid":"u-zk-1","hits":60,"window":60,"scale":0.9}`, 0)
	c.rdb.Set(ctx, "info:link:testapp", "u-info-1", 0)
	c.rdb.Set(ctx, "statsrequest:redis-monitor:testapp", "u-stats-1", 0)
	answers := c.answers(t, "demo.outbound_firehose", 2)
	assertUUIDs(t, "answers with ZooKeeper down", answers, "u-info-1", "u-stats-1")
	if c.gone(update1)() || r.m.Failed() != 0 || r.m.Dropped() != 0 {
		t.Fatalf("the domain-update was dropped (%v) or failed (%d failures) while ZooKeeper was down", c.gone(update1)(), r.m.Failed())
	}

	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	answers = c.answers(t, "demo.outbound_firehose", 3)
	byUUID := assertUUIDs(t, "answers after ZooKeeper came", answers, "u-info-1", "u-stats-1", "u-zk-1")
	if zkAnswer := byUUID["u-zk-1"]; zkAnswer["action"] != "domain-update" || zkAnswer["error"] != nil {
		t.Errorf("domain-update answer %v, want SUCCESS (no error)", zkAnswer)
	}
	want := "blacklist: []\ndomains:\n  dmoz.org:\n    hits: 60\n    scale: 0.9\n    window: 60\n"
	if got := zkDocument(t, z); got != want {
		t.Errorf("document %q once the domain-update was answered, want %q", got, want)
	}

	// A 10 s outage while running.
	logged := len(r.log.String())
	z.Stop()
	outageEnds := time.Now().Add(10 * time.Second)
	const update2 = "zk:blacklist-update:ebay.com:testapp"
	c.rdb.Set(ctx, update2, `{"domain":"ebay.com","uuid":"u-zk-2"}`, 0)
	c.rdb.Set(ctx, "info:link:testapp", "u-info-2", 0)
	answers = c.answers(t, "demo.outbound_firehose", 4)
	assertUUIDs(t, "answers during the outage", answers, "u-info-1", "u-stats-1", "u-zk-1", "u-info-2")
	for time.Now().Before(outageEnds) {
		time.Sleep(100 * time.Millisecond)
	}
	if c.gone(update2)() || r.m.Failed() != 0 || r.m.Dropped() != 0 {
		t.Fatalf("the blacklist-update was dropped (%v) or failed (%d failures) during the outage", c.gone(update2)(), r.m.Failed())
	}
	var warnings, attempts []string
	for _, line := range strings.Split(r.log.String()[logged:], "\n") {
		if strings.Contains(line, `"level": "WARNING"`) || strings.Contains(line, `"level": "ERROR"`) || strings.Contains(line, `"level": "CRITICAL"`) {
			warnings = append(warnings, line)
		}
		if strings.Contains(line, "failed to connect") {
			attempts = append(attempts, line)
		}
	}
	// Attempts after about 1, 3 and 7 s; a client without back-off tries
	// and warns once a second.
	if len(attempts) < 1 || len(attempts) > 5 {
		t.Errorf("%d connection attempts logged in a 10 s outage, want 1 to 5:\n%s", len(attempts), strings.Join(attempts, "\n"))
	}
	if len(warnings) > len(attempts)+3 {
		t.Errorf("%d warnings in a 10 s outage, want the %d attempts and at most 3 more:\n%s", len(warnings), len(attempts), strings.Join(warnings, "\n"))
	}

	if err := z.Restart(); err != nil {
		t.Fatal(err)
	}
	answers = c.answers(t, "demo.outbound_firehose", 5)
	byUUID = assertUUIDs(t, "answers after the outage", answers, "u-info-1", "u-stats-1", "u-zk-1", "u-info-2", "u-zk-2")
	if zkAnswer := byUUID["u-zk-2"]; zkAnswer["action"] != "blacklist-update" || zkAnswer["error"] != nil {
		t.Errorf("blacklist-update answer %v, want SUCCESS (no error)", zkAnswer)
	}
	want = "blacklist:\n- ebay.com\ndomains:\n  dmoz.org:\n    hits: 60\n    scale: 0.9\n    window: 60\n"
	if got := zkDocument(t, z); got != want {
		t.Errorf("document %q after the outage, want %q", got, want)
	}
}

// allPlugins enables the five default plugins.
const allPlugins = `{"plugins.info_monitor.InfoMonitor": 100, "plugins.stop_monitor.StopMonitor": 200,
	"plugins.expire_monitor.ExpireMonitor": 300, "plugins.stats_monitor.StatsMonitor": 400,
	"plugins.zookeeper_monitor.ZookeeperMonitor": 500}`

// assertUUIDs checks the answers' uuids, in any order, and returns the
// answers by uuid.
func assertUUIDs(t *testing.T, what string, answers []map[string]any, want ...string) map[string]map[string]any {
	t.Helper()
	byUUID := map[string]map[string]any{}
	var got []string
	for _, a := range answers {
		u, _ := a["uuid"].(string)
		got = append(got, u)
		byUUID[u] = a
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: uuids %q, want %q", what, got, want)
	}
	return byUUID
}

// zkDocument reads the domain configuration from ZooKeeper, as a crawler
// would.
func zkDocument(t *testing.T, z *harness.ZooKeeper) string {
	t.Helper()
	data, _, err := harness.ZooKeeperClient(t, z.Addr).Get("/scrapy-cluster/crawler/all")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
