package recrawl

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

var clusterDomains = []string{"a.com", "b.com", "c.com"}

// feedCluster keeps and queues a seed on each of clusterDomains as the
// Kafka Monitor does on a Redis Cluster.
func feedCluster(t *testing.T, cc *redis.ClusterClient, spec Spec, now time.Time) {
	t.Helper()
	ctx := context.Background()
	for _, d := range clusterDomains {
		if got, _ := rediskeys.DomainOfURL("http://" + d + "/"); got != d {
			t.Fatalf("the domain of %s is %s", d, got)
		}
		fed := map[string]any{"url": "http://" + d + "/", "appid": "app", "crawlid": "c1", "spiderid": "link",
			"priority": json.Number("1"), "maxdepth": json.Number("2"), FieldRun: FirstRun,
			FieldRecrawl: map[string]any{"every": json.Number("10")}}
		member, r, err := crawlrequest.FromFed(fed)
		if err != nil {
			t.Fatal(err)
		}
		pipe := cc.Pipeline()
		err = FeedCluster(ctx, cc, pipe, Seed{Queue: rediskeys.Cluster.Queue("link", d), Score: r.Score(), Member: member, Crawl: crawl,
			URL: r.URL, Domain: d, Spec: spec}, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// On a Redis Cluster, eight starters race for each run of a crawl with
// seeds on three domains: a run starts once, only when due and after the
// run before completed (its marker done at least ClaimMargin ago); each
// domain's share of run 1 is kept, its duplicate filter dropped and its
// seed queued with run 2; the start leaves nothing half done, and the
// past run reads as the sum of its shares.
func TestEachRunStartsOnceHoweverManyStartersTryOnARedisCluster(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	cc := rc.TestClient(t)
	ctx := context.Background()
	l := rediskeys.Cluster
	t0 := time.Unix(1_800_000_000, 0)
	feedCluster(t, cc, Spec{Every: 10, Runs: 3, Emit: EmitAll}, t0)
	at := func(now time.Time) (started []Started) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 8 {
			s := NewStarter(cc, time.Hour, 10)
			s.now = func() time.Time { return now }
			wg.Go(func() {
				got, err := s.StartDue(ctx)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, g := range got {
					if g.Outcome == "started" {
						started = append(started, g)
					}
				}
			})
		}
		wg.Wait()
		return started
	}
	marker := l.Completed("link", "app", "c1")
	if got := at(t0.Add(5 * time.Second)); len(got) != 0 {
		t.Fatalf("a run started before it was due: %+v", got)
	}
	if got := at(t0.Add(11 * time.Second)); len(got) != 0 {
		t.Fatalf("run 2 started while run 1 goes on (marker %q): %+v", cc.Get(ctx, marker).Val(), got)
	}
	cc.Set(ctx, marker, "done|"+ledger.Stamp(t0.Add(11*time.Second)), time.Hour)
	if got := at(t0.Add(12 * time.Second)); len(got) != 0 {
		t.Fatalf("run 2 started within ClaimMargin of run 1's completion: %+v", got)
	}
	cc.SAdd(ctx, l.DupeFilter("link", "b.com", "c1"), "fp")
	got := at(t0.Add(14 * time.Second))
	if len(got) != 1 || got[0].Run != 2 {
		t.Fatalf("run 2 started %+v, want once", got)
	}
	for _, d := range clusterDomains {
		members := cc.ZRange(ctx, l.Queue("link", d), 0, -1).Val()
		if len(members) != 2 || !strings.Contains(members[0]+members[1], `"run":2`) {
			t.Errorf("%s's queue after run 2's start: %v, want run 1's seed and run 2's", d, members)
		}
		share := cc.HGetAll(ctx, crawl.LedgerIn(l, d).Hash).Val()
		if share[ledger.FieldRun] != "2" || share[ledger.FieldSeeds] != "1" {
			t.Errorf("%s's share after run 2's start: %v, want run 2 with its seed", d, share)
		}
		if past := cc.HGet(ctx, l.LedgerRuns("link", "app", "c1", d), "1").Val(); !strings.Contains(past, "seeds\n1") {
			t.Errorf("%s's run 1 share kept as %q", d, past)
		}
	}
	if cc.Exists(ctx, l.DupeFilter("link", "b.com", "c1")).Val() != 0 {
		t.Error("run 2 kept run 1's duplicate filter")
	}
	if v := cc.Get(ctx, marker).Val(); v != "recrawl|0" || cc.ZCard(ctx, l.RecrawlStarting()).Val() != 0 {
		t.Errorf("after the start: marker %q, %d starting; want recrawl|0 and none", v, cc.ZCard(ctx, l.RecrawlStarting()).Val())
	}
	runs, err := ledger.RunsCluster(ctx, cc, crawl, nil)
	if err != nil || len(runs) != 1 || runs[0].Run != 1 || runs[0].Progress.Seeds != 3 {
		t.Errorf("past runs %+v %v, want run 1 with 3 seeds", runs, err)
	}
	in, err := Read(ctx, cc, crawl)
	if err != nil || in.RunsStarted != 2 || in.NextRunAt == nil {
		t.Errorf("info %+v %v, want 2 runs started and a next run", in, err)
	}
}
