package monitor_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// eligible gathers scrapy_redis_monitor_eligible_requests and
// scrapy_redis_monitor_eligible_render_requests (as "render:<spider>")
// from the monitor's collectors, by spider.
func eligible(t *testing.T, r *running) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.m.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		prefix := map[string]string{
			"scrapy_redis_monitor_eligible_requests": "", "scrapy_redis_monitor_eligible_render_requests": "render:",
		}
		p, ok := prefix[f.GetName()]
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			out[p+m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return out
}

// waitForGauge waits until the gauge reads want (the domain configuration
// is read in the background) and fails with what it read last.
func waitForGauge(t *testing.T, r *running, when string, want map[string]float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := eligible(t, r)
		if maps.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("scrapy_redis_monitor_eligible_requests %s: %v, want %v", when, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The gauge against a known set of queues and throttles, the domain
// configuration in Redis or in ZooKeeper: each domain's backlog capped by
// its throttle's rate per minute, the blacklist and zero hits letting out
// nothing, QUEUE_HITS per QUEUE_WINDOW for unlisted domains; render queues
// counted apart, each capped by the domain's rate; a spider type with
// crawlers and no queue at 0; a change of the configuration followed.
func TestEligibleRequestsAreTheBacklogTheThrottlesLetOutInAMinute(t *testing.T) {
	for _, store := range []string{"redis", "zookeeper"} {
		t.Run(store, func(t *testing.T) {
			c := newCluster(t)
			ctx := context.Background()
			const path = "/scrapy-cluster/crawler/all"
			overrides := map[string]string{"QUEUE_HITS": "12", "QUEUE_WINDOW": "60"}
			var config domainconfig.Store = domainconfig.NewRedisStore(c.rdb, path)
			if store == "zookeeper" {
				z := harness.StartZooKeeper(t)
				zs, err := domainconfig.DialZooKeeper(ctx, []string{z.Addr}, path, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { zs.Close() })
				config, overrides["ZOOKEEPER_HOSTS"] = zs, z.Addr
			}
			err := config.Update(ctx, func(d *domainconfig.Document) error {
				d.AddBlacklist("blocked.com")
				d.UpdateDomain("fast.com", 20, 30, 1)    // 40 a minute
				d.UpdateDomain("slow.org", 90, 3600, 1)  // 1.5 a minute
				d.UpdateDomain("half.net", 10, 60, 0.5)  // 5 a minute
				d.UpdateDomain("zero.io", 10, 60, 0)     // none
				d.UpdateDomain("capped.com", 100, 60, 1) // 100 a minute
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for key, backlog := range map[string]int{
				rediskeys.QueueKey("link", "fast.com"): 100, rediskeys.QueueKey("link", "slow.org"): 1000,
				rediskeys.QueueKey("link", "half.net"): 3, rediskeys.QueueKey("link", "zero.io"): 50,
				rediskeys.QueueKey("link", "blocked.com"): 500, rediskeys.QueueKey("link", "plain.com"): 30,
				rediskeys.QueueKey("link", "capped.com"): 7, rediskeys.QueueKey("link", "127.0.0.1."): 2,
				rediskeys.QueueKey("wandering", "fast.com"): 10, rediskeys.QueueKey("wandering", "other.com"): 100,
				rediskeys.RenderQueueKey("link", "fast.com"): 25, rediskeys.RenderQueueKey("link", "js.com"): 4,
				rediskeys.RenderQueueKey("link", "blocked.com"): 9,
			} {
				members := make([]redis.Z, backlog)
				for i := range members {
					members[i] = redis.Z{Score: -1, Member: fmt.Sprintf(`{"url": "http://%s/%d"}`, key, i)}
				}
				c.rdb.ZAdd(ctx, key, members...)
			}
			c.rdb.Set(ctx, rediskeys.CrawlerHeartbeatKey("host1", "idle", "id1"), "1", 0)
			r := c.start(t, overrides)

			// link: 40 + 1.5 + 3 (its backlog) + 0 + 0 (blacklisted) + 12
			// (QUEUE_HITS) + 7 (its backlog) + 2; the raw backlog is 1692.
			// Its render queues: 25 (fast.com's rate is 40) + 4 (js.com's
			// backlog) + 0 (blacklisted).
			waitForGauge(t, r, "at start", map[string]float64{
				"link": 65.5, "wandering": 22, "idle": 0, "render:link": 29, "render:wandering": 0, "render:idle": 0,
			})

			if err := config.Update(ctx, func(d *domainconfig.Document) error { d.AddBlacklist("fast.com"); return nil }); err != nil {
				t.Fatal(err)
			}
			waitForGauge(t, r, "once fast.com is blacklisted", map[string]float64{
				"link": 25.5, "wandering": 12, "idle": 0, "render:link": 4, "render:wandering": 0, "render:idle": 0,
			})
		})
	}
}
