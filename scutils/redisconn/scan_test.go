package redisconn_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// scanAll is every key ScanMasters finds for pattern in c.
func scanAll(t *testing.T, c redis.UniversalClient, pattern string) []string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	err := redisconn.ScanMasters(context.Background(), c, pattern, 3, func(keys []string) {
		mu.Lock()
		got = append(got, keys...)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

// On a Redis Cluster ScanMasters finds the matching keys of every master
// (20 domains' queues spread over the three), where one SCAN through the
// cluster client sees one node's; on one Redis it is a plain SCAN.
func TestScanMastersFindsTheKeysOfEveryMaster(t *testing.T) {
	ctx := context.Background()
	rc := harness.StartRedisCluster(t)
	cc := rc.TestClient(t)
	r := harness.StartRedis(t).TestClient(t)
	l := rediskeys.Cluster
	var want, wantSingle []string
	masters := map[string]bool{}
	for i := range 20 {
		d := fmt.Sprintf("d%d.com", i)
		for _, k := range []string{l.Queue("link", d), l.Queue("other", d), l.DupeFilter("link", d, "c1")} {
			if err := cc.Set(ctx, k, "x", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		r.Set(ctx, rediskeys.QueueKey("link", d), "x", 0)
		r.Set(ctx, rediskeys.QueueKey("other", d), "x", 0)
		want = append(want, l.Queue("link", d))
		wantSingle = append(wantSingle, rediskeys.QueueKey("link", d))
		masters[rc.MasterOf(t, l.Queue("link", d)).Addr] = true
	}
	slices.Sort(want)
	slices.Sort(wantSingle)
	if len(masters) != 3 {
		t.Fatalf("the keys are on %d masters, want 3", len(masters))
	}
	if got := scanAll(t, cc, l.QueuePattern("link")); !slices.Equal(got, want) {
		t.Errorf("cluster scan found\n%q\nwant\n%q", got, want)
	}
	if got := scanAll(t, r, rediskeys.Single.QueuePattern("link")); !slices.Equal(got, wantSingle) {
		t.Errorf("single scan found\n%q\nwant\n%q", got, wantSingle)
	}
	one, _, err := cc.Scan(ctx, 0, l.QueuePattern("link"), 1000).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(one) >= len(want) {
		t.Errorf("one SCAN through the cluster client found %d keys, as many as every master's %d: the test proves nothing", len(one), len(want))
	}
}
