package monitor_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/monitor"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// seedCluster queues perDomain requests of crawl in each domain's cluster
// queue, counted in the crawl's share of the domain, as the Kafka Monitor
// does in cluster mode (ledger.QueueSeedsIn).
func seedCluster(t *testing.T, cc *redis.ClusterClient, crawl ledger.Crawl, domains []string, perDomain int) {
	t.Helper()
	var seeds []ledger.Seed
	for _, d := range domains {
		for i := range perDomain {
			member := fmt.Sprintf(`{"url":"http://%s/%s/%d","appid":%q,"crawlid":%q,"spiderid":%q,"priority":%d}`,
				d, crawl.CrawlID, i, crawl.AppID, crawl.CrawlID, crawl.SpiderID, 10+i)
			seeds = append(seeds, ledger.Seed{Queue: rediskeys.Cluster.Queue(crawl.SpiderID, d), Score: -float64(10 + i),
				Member: member, Crawl: crawl, Domain: d})
		}
	}
	ctx := context.Background()
	pipe := cc.Pipeline()
	ledger.QueueSeedsIn(ctx, pipe, rediskeys.Cluster, seeds, time.Now(), time.Hour)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// crawlCluster takes every request of crawl from the domains' cluster queues
// and counts each published in the crawl's share of its domain, in one
// step per domain, as a crawler's acknowledgement does.
func crawlCluster(t *testing.T, cc *redis.ClusterClient, crawl ledger.Crawl, domains []string) {
	t.Helper()
	ctx := context.Background()
	for _, d := range domains {
		q := rediskeys.Cluster.Queue(crawl.SpiderID, d)
		members, err := cc.ZRange(ctx, q, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		var tl ledger.Tally
		pipe := cc.TxPipeline()
		for _, m := range members {
			if !strings.Contains(m, fmt.Sprintf(`"crawlid":%q`, crawl.CrawlID)) {
				continue
			}
			pipe.ZRem(ctx, q, m)
			tl.Fetched(crawl, 200)
			tl.Published(crawl, false)
		}
		tl.WriteIn(ctx, pipe, rediskeys.Cluster, d, time.Now(), time.Hour)
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// requestCluster writes a request key on the cluster and waits until a
// monitor is done with it (the key, its lock and its failure count gone).
func requestCluster(t *testing.T, cc *redis.ClusterClient, key, value string) {
	t.Helper()
	ctx := context.Background()
	if err := cc.Set(ctx, key, value, 0).Err(); err != nil {
		t.Fatal(err)
	}
	l := rediskeys.Cluster
	waitFor(t, key+" to be handled", func() bool {
		for _, k := range []string{key, l.RequestLock(key), l.RequestFailures(key)} {
			if n, err := cc.Exists(ctx, k).Result(); err != nil || n != 0 {
				return false
			}
		}
		return true
	})
}

// answerTo is the answer among answers whose field has value.
func answerTo(t *testing.T, answers []map[string]any, field, value string) map[string]any {
	t.Helper()
	for _, a := range answers {
		if a[field] == value {
			return a
		}
	}
	t.Fatalf("no answer with %s %q among %v", field, value, answers)
	return nil
}

func number(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// Two Redis Monitors on a Redis Cluster of three masters answer info,
// stats, stop and expire over the queues and ledger shares of every
// master, and publish each crawl's crawl-complete exactly once, with the
// reason that ended it.
func TestTwoMonitorsAnswerOnARedisCluster(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	c := &cluster{kafka: harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})}
	cc := rc.TestClient(t)
	ctx := context.Background()

	var domains []string
	masters := map[string]bool{}
	for i := range 12 {
		d := fmt.Sprintf("d%d.example", i)
		domains = append(domains, d)
		masters[rc.MasterOf(t, rediskeys.Cluster.Queue("link", d)).Addr] = true
	}
	if len(masters) != 3 {
		t.Fatalf("the test's domains are on %d masters, want 3", len(masters))
	}
	stopme := ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "stopme"}
	expireme := ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "expireme"}
	finish := ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "finish"}
	seedCluster(t, cc, stopme, domains, 2)
	seedCluster(t, cc, expireme, domains[:6], 1)
	seedCluster(t, cc, finish, domains, 1)

	over := map[string]string{"REDIS_CLUSTER_NODES": rc.Seeds(), "LEDGER_COMPLETE_INTERVAL": "0.05", "LEDGER_COMPLETE_QUIET": "0",
		"PLUGINS": `{"plugins.info_monitor.InfoMonitor": 100, "plugins.stop_monitor.StopMonitor": 200, ` +
			`"plugins.expire_monitor.ExpireMonitor": 300, "plugins.stats_monitor.StatsMonitor": 400}`}
	monitors := []*running{c.run(t, c.settings(t, over), rc.TestClient(t)), c.run(t, c.settings(t, over), rc.TestClient(t))}
	t.Cleanup(func() {
		if t.Failed() {
			for i, r := range monitors {
				t.Logf("monitor %d's log:\n%s", i, r.log.String())
			}
		}
	})
	const topic = "demo.outbound_firehose"
	seen := 0
	next := func(n int) []map[string]any {
		t.Helper()
		got := c.answers(t, topic, seen+n)[seen:]
		seen += n
		return got
	}

	requestCluster(t, cc, "statsrequest:queue:app", "u-queue")
	queues, _ := answerTo(t, next(1), "uuid", "u-queue")["queues"].(map[string]any)
	link, _ := queues["queue_link"].(map[string]any)
	if number(queues["total_backlog"]) != 42 || number(link["spider_backlog"]) != 42 || number(link["num_domains"]) != 12 {
		t.Errorf("queue stats %v: want a backlog of 42 in 12 domains", queues)
	}

	requestCluster(t, cc, "info:link:app:stopme", "u-info")
	info := answerTo(t, next(1), "uuid", "u-info")
	progress, _ := info["progress"].(map[string]any)
	infoDomains, _ := info["domains"].(map[string]any)
	d0, _ := infoDomains["d0.example"].(map[string]any)
	if number(info["total_pending"]) != 24 || number(info["total_domains"]) != 12 || number(d0["total"]) != 2 ||
		number(d0["high_priority"]) != 11 || number(d0["low_priority"]) != 10 ||
		number(progress["seeds"]) != 24 || number(progress["queued"]) != 24 || progress["state"] != "running" {
		t.Errorf("info on stopme: %v", info)
	}
	requestCluster(t, cc, "info:link:app", "u-app")
	app := answerTo(t, next(1), "uuid", "u-app")
	appProgress, _ := app["progress"].(map[string]any)
	if number(app["total_pending"]) != 42 || number(app["total_crawlids"]) != 3 || number(app["total_domains"]) != 12 || len(appProgress) != 3 {
		t.Errorf("info on the app: %v", app)
	}

	crawlCluster(t, cc, finish, domains)
	done := answerTo(t, next(1), "crawlid", "finish")
	progress, _ = done["progress"].(map[string]any)
	if done["action"] != "crawl-complete" || done["reason"] != "finished" || number(progress["published"]) != 12 ||
		number(progress["done"]) != 12 || progress["state"] != "complete" {
		t.Errorf("crawl-complete of finish: %v", done)
	}

	requestCluster(t, cc, "stop:link:app:stopme", "u-stop")
	stopped := next(2) // the stop's answer, then the crawl's crawl-complete
	if a := answerTo(t, stopped, "uuid", "u-stop"); a["action"] != "stop" || number(a["total_purged"]) != 24 {
		t.Errorf("stop answer: %v", a)
	}
	if stopped[0]["action"] != "stop" {
		t.Errorf("the crawl-complete went out before the stop's answer: %v", stopped)
	}
	cs := answerTo(t, stopped, "action", "crawl-complete")
	progress, _ = cs["progress"].(map[string]any)
	purged, _ := progress["purged"].(map[string]any)
	if cs["crawlid"] != "stopme" || cs["reason"] != "stopped" || number(purged["stop"]) != 24 || number(progress["done"]) != 24 {
		t.Errorf("crawl-complete of stopme: %v", cs)
	}
	if ok, err := cc.SIsMember(ctx, rediskeys.BlacklistKey("link"), "app||stopme").Result(); err != nil || !ok {
		t.Errorf("stopme is not blacklisted: %v %v", ok, err)
	}

	past := strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)
	requestCluster(t, cc, rediskeys.TimeoutKey("link", "app", "expireme"), past)
	expired := next(2)
	if a := answerTo(t, expired, "action", "expired"); a["crawlid"] != "expireme" || number(a["total_expired"]) != 6 {
		t.Errorf("expired answer: %v", a)
	}
	if ce := answerTo(t, expired, "action", "crawl-complete"); ce["crawlid"] != "expireme" || ce["reason"] != "expired" {
		t.Errorf("crawl-complete of expireme: %v", ce)
	}

	requestCluster(t, cc, "statsrequest:redis-monitor:app", "u-rm")
	rm := answerTo(t, next(1), "uuid", "u-rm")
	nodes, _ := rm["nodes"].(map[string]any)
	ids := 0
	for _, v := range nodes {
		l, _ := v.([]any)
		ids += len(l)
	}
	total, _ := rm["total"].(map[string]any)
	if ids != 2 || number(total["lifetime"]) < 6 {
		t.Errorf("redis-monitor stats %v: want 2 monitors' heartbeats and at least 6 requests", rm)
	}
	left, err := cc.ZCard(ctx, rediskeys.Cluster.Queue("link", "d0.example")).Result()
	if err != nil || left != 0 {
		t.Errorf("d0.example's queue holds %d after the stop, the expiry and the crawl (%v)", left, err)
	}
	published, shares := shutdownAll(t, monitors, (*monitor.Monitor).Completed)
	if published != 3 {
		t.Errorf("the monitors published %d crawl-complete messages (%s), want 3: one per crawl", published, shares)
	}
}
