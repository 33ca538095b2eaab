package stop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/stop"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

func TestStopPurgesBlacklistsAndAnswersAsTheSpec(t *testing.T) {
	f, rdb := plugintest.Start(t, &stop.Monitor{})
	ctx := context.Background()
	for d := range 20 {
		key := fmt.Sprintf("link:d%d.com:queue", d)
		for i := range 5 {
			rdb.ZAdd(ctx, key, redis.Z{Score: -1, Member: fmt.Sprintf(`{"url":"http://d%d.com/%d","appid":"testapp","crawlid":"ABC123","priority":1}`, d, i)})
		}
		rdb.ZAdd(ctx, key, redis.Z{Score: -1, Member: fmt.Sprintf(`{"url":"http://d%d.com/k","appid":"testapp","crawlid":"keep","priority":1}`, d)})
	}
	rdb.Set(ctx, "timeout:link:testapp:ABC123", "1452094703", 0)
	rdb.Set(ctx, "stop:link:testapp:ABC123", "1ist234", 0)

	if _, err := f.Process(ctx, "stop:link:testapp:ABC123"); err != nil {
		t.Fatal(err)
	}
	f.ExpectOnlyAnswer(t, `{"total_purged": 100, "server_time": 1767323045, "crawlid": "ABC123",
		"uuid": "1ist234", "spiderid": "link", "appid": "testapp", "action": "stop"}`)
	// The purged requests are gone, the others stay.
	keys, _ := rdb.Keys(ctx, "link:*:queue").Result()
	total := 0
	for _, k := range keys {
		members := rdb.ZRange(ctx, k, 0, -1).Val()
		for _, m := range members {
			if m != fmt.Sprintf(`{"url":"http://%s/k","appid":"testapp","crawlid":"keep","priority":1}`, k[5:len(k)-6]) {
				t.Errorf("left in %s: %s", k, m)
			}
		}
		total += len(members)
	}
	if total != 20 {
		t.Fatalf("%d requests left, want the other crawl's 20", total)
	}
	if !rdb.SIsMember(ctx, "link:blacklist", "testapp||ABC123").Val() {
		t.Fatal("crawl not blacklisted")
	}
	for _, k := range []string{"timeout:link:testapp:ABC123", "stop:link:testapp:ABC123"} {
		if rdb.Exists(ctx, k).Val() != 0 {
			t.Errorf("%s left behind", k)
		}
	}
}

func TestStopNeedsACrawlID(t *testing.T) {
	rdb := plugintest.Redis(t)
	f := plugintest.Setup(t, &stop.Monitor{}, rdb, nil, nil)
	rdb.Set(context.Background(), "stop:link:testapp", "u", 0)
	if _, err := f.Process(context.Background(), "stop:link:testapp"); err == nil || len(f.Published()) != 0 {
		t.Fatalf("err %v, published %v", err, f.Published())
	}
}

// A stop of a crawl with a ledger answers exactly as the original, counts
// the purged requests (purged:stop, done) with their removal and records the
// stop; no completer claims the crawl before the answer is out, and then its
// crawl-complete says "stopped".
func TestStopOfACrawlWithALedgerCountsThePurgeAndEndsItAfterItsAnswer(t *testing.T) {
	f, rdb := plugintest.Start(t, &stop.Monitor{})
	ctx := context.Background()
	if err := ledger.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	crawl := ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "ABC123"}
	pipe := rdb.Pipeline()
	for i := range 30 {
		ledger.QueueSeed(ctx, pipe, fmt.Sprintf("link:d%d.com:queue", i%3), -1,
			fmt.Sprintf(`{"url":"http://d%d.com/%d","appid":"testapp","crawlid":"ABC123","priority":1}`, i%3, i), crawl, time.Now(), time.Hour)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	rdb.Set(ctx, "stop:link:testapp:ABC123", "u1", 0)

	completer := ledger.NewCompleter(rdb, "another monitor", time.Hour)
	claimedDuringAnswer := -1
	env := f.Env
	env.Now = time.Now
	env.Publish = func(ctx context.Context, answer map[string]any) error {
		fs, err := completer.Claim(ctx)
		claimedDuringAnswer = len(fs)
		return err
	}
	m := &stop.Monitor{}
	if err := m.Setup(ctx, env); err != nil {
		t.Fatal(err)
	}
	if err := m.Handle(ctx, "stop:link:testapp:ABC123", "u1"); err != nil {
		t.Fatal(err)
	}
	if claimedDuringAnswer != 0 {
		t.Fatalf("a completer claimed %d crawls while the stop answered, want 0", claimedDuringAnswer)
	}
	ps, err := ledger.Read(ctx, rdb, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if p := ps[0]; p.Purged["stop"] != 30 || p.Done != 30 || p.Queued != 0 || p.EndedBy != "stop" {
		t.Fatalf("progress %+v, want 30 purged by the stop, done, ended by it", p)
	}
	fs, err := completer.Claim(ctx)
	if err != nil || len(fs) != 1 || fs[0].Progress.Reason() != "stopped" {
		t.Fatalf("after the answer the completer claimed %+v (%v), want the crawl, stopped", fs, err)
	}
}

// A stop purges the crawl's render requests with its others: none is
// left for a rendering crawler to fetch.
func TestStopPurgesTheCrawlsRenderRequests(t *testing.T) {
	f, rdb := plugintest.Start(t, &stop.Monitor{})
	ctx := context.Background()
	keep := `{"appid":"testapp","crawlid":"keep","priority":1,"render":true,"url":"http://spa.example/k"}`
	for i := range 3 {
		rdb.ZAdd(ctx, rediskeys.RenderQueueKey("link", "spa.example"), redis.Z{Score: -1,
			Member: fmt.Sprintf(`{"appid":"testapp","crawlid":"ABC123","priority":1,"render":{"timeout":5},"url":"http://spa.example/%d"}`, i)})
	}
	rdb.ZAdd(ctx, rediskeys.RenderQueueKey("link", "spa.example"), redis.Z{Score: -1, Member: keep})
	rdb.ZAdd(ctx, rediskeys.QueueKey("link", "spa.example"), redis.Z{Score: -1, Member: `{"appid":"testapp","crawlid":"ABC123","priority":1,"url":"http://spa.example/plain"}`})
	rdb.Set(ctx, "stop:link:testapp:ABC123", "u1", 0)
	if _, err := f.Process(ctx, "stop:link:testapp:ABC123"); err != nil {
		t.Fatal(err)
	}
	f.ExpectOnlyAnswer(t, `{"total_purged": 4, "server_time": 1767323045, "crawlid": "ABC123",
		"uuid": "u1", "spiderid": "link", "appid": "testapp", "action": "stop"}`)
	if got := rdb.ZRange(ctx, rediskeys.RenderQueueKey("link", "spa.example"), 0, -1).Val(); !reflect.DeepEqual(got, []string{keep}) {
		t.Errorf("the render queue holds %v, want only the other crawl's %s", got, keep)
	}
	if n := rdb.Exists(ctx, rediskeys.QueueKey("link", "spa.example")).Val(); n != 0 {
		t.Error("the crawl's ordinary request is left")
	}
}

// On a Redis Cluster a run of a scheduled crawl starts in three steps
// (recrawl/cluster.go), and the crawl's completion marker is held by the
// start until its last step. A stop that lands between the claim and the
// start in the domains (a monitor died there, or is still at it) finishes
// that start first: then it holds the crawl, every share of the new run
// records the stop, the run's seeds are purged, and the crawl reads as
// ended by the stop with nothing outstanding (its crawl-complete says
// "stopped", not "finished").
func TestAStopDuringARunsStartEndsThatRunOnARedisCluster(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	cc := rc.TestClient(t)
	ctx := context.Background()
	l := rediskeys.Cluster
	cr := ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "c1"}
	domains := []string{"a.com", "b.com", "c.com"}
	t0, ttl := time.Now(), time.Hour
	spec := recrawl.Spec{Every: 10, Emit: recrawl.EmitAll}
	for _, d := range domains {
		fed := map[string]any{"url": "http://" + d + "/", "appid": cr.AppID, "crawlid": cr.CrawlID, "spiderid": cr.SpiderID,
			"priority": json.Number("1"), "maxdepth": json.Number("1"), recrawl.FieldRun: recrawl.FirstRun,
			recrawl.FieldRecrawl: map[string]any{"every": json.Number("10")}}
		member, r, err := crawlrequest.FromFed(fed)
		if err != nil {
			t.Fatal(err)
		}
		pipe := cc.Pipeline()
		if err := recrawl.FeedCluster(ctx, cc, pipe, recrawl.Seed{Queue: l.Queue(cr.SpiderID, d), Score: r.Score(), Member: member,
			Crawl: cr, URL: r.URL, Domain: d, Spec: spec}, t0, ttl); err != nil {
			t.Fatal(err)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		// Run 1's seed was crawled: out of its queue.
		if err := cc.Del(ctx, l.Queue(cr.SpiderID, d)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Run 1's crawl-complete is out; run 2 is claimed (step 1) and no
	// further.
	marker := l.Completed(cr.SpiderID, cr.AppID, cr.CrawlID)
	if err := cc.Set(ctx, marker, "done|"+ledger.Stamp(t0), ttl).Err(); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(20 * time.Second)
	claim := redisscripts.RecrawlClusterClaim{Schedule: recrawl.ScheduleIn(l, cr), Marker: marker, Starting: l.RecrawlStarting(),
		Member: cr.Member(), N: 2, Hold: redisscripts.RecrawlHoldPrefix(2) + ledger.Stamp(t1.Add(ttl)), Margin: recrawl.ClaimMargin,
		Domains: domains, Stamp: ledger.Stamp(t1), TTL: ttl}
	if got, err := redisscripts.Eval(ctx, cc, claim).Text(); err != nil || got != "claimed" {
		t.Fatalf("the claim of run 2: %q, %v", got, err)
	}

	purged, err := stop.HaltCluster(ctx, cc, recrawl.NewStarter(cc, ttl, 10), cr, ledger.PurgedStop, "stop:test", t1)
	if err != nil {
		t.Fatal(err)
	}
	if purged != len(domains) {
		t.Errorf("purged %d requests, want run 2's %d seeds", purged, len(domains))
	}
	ps, err := ledger.ReadClusterCrawls(ctx, cc, cr.SpiderID, cr.AppID, cr.CrawlID)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[cr]
	if p == nil || p.EndedBy != string(ledger.PurgedStop) || p.Reason() != "stopped" || p.Seeds != int64(len(domains)) ||
		p.Purged[string(ledger.PurgedStop)] != int64(len(domains)) || p.Outstanding() != 0 {
		t.Fatalf("run 2 reads %+v: want its %d seeds purged by the stop, ended by it, nothing outstanding", p, len(domains))
	}
	if v := cc.Get(ctx, marker).Val(); !strings.HasPrefix(v, "stop:test|") {
		t.Errorf("the completion marker is %q, want the stop's hold", v)
	}
	if n := cc.ZCard(ctx, l.RecrawlStarting()).Val(); n != 0 {
		t.Errorf("the starting set holds %d crawls, want none", n)
	}
	in, err := recrawl.Read(ctx, cc, cr)
	if err != nil || in == nil || in.State != "ended" || in.EndedBy != "stop" || in.RunsStarted != 2 {
		t.Errorf("the schedule after the stop: %+v, %v; want run 2 started, ended by the stop", in, err)
	}
}
