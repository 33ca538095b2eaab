package monitor_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

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
	all := `{"plugins.info_monitor.InfoMonitor": 100, "plugins.stop_monitor.StopMonitor": 200,
		"plugins.expire_monitor.ExpireMonitor": 300, "plugins.stats_monitor.StatsMonitor": 400,
		"plugins.zookeeper_monitor.ZookeeperMonitor": 500}`
	c.start(t, map[string]string{"PLUGINS": all, "ZOOKEEPER_HOSTS": z.Addr})

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
	conn, _, err := zk.Connect([]string{z.Addr}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data, _, err := conn.Get("/scrapy-cluster/crawler/all")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := domainconfig.Parse(data)
	if err != nil || len(doc.Blacklist) != 1 || doc.Blacklist[0] != "ebay.com" {
		t.Fatalf("zookeeper document %q: %+v, %v", data, doc, err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
