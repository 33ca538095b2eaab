package stop_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/stop"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
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
