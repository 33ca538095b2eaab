package expire_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/expire"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// An expire waits for the crawl's deadline, then purges its requests from
// the spider's queues, ordinary and render queues alike, blacklists it and
// notifies.
func TestExpireWaitsForTheDeadlineThenPurgesAndNotifies(t *testing.T) {
	for _, tc := range []struct {
		name, queue string
		render      bool
	}{
		{"queue", rediskeys.QueueKey("link", "a.com"), false},
		{"render queue", rediskeys.RenderQueueKey("link", "a.com"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, rdb := plugintest.Start(t, &expire.Monitor{})
			ctx := context.Background()
			deadline := f.Clock.Add(time.Minute)
			for i := range 84 {
				req := map[string]any{"url": fmt.Sprintf("http://a.com/%d", i), "appid": "testapp", "crawlid": "ist234", "priority": 1, "expires": deadline.Unix()}
				if tc.render {
					req["render"] = true
				}
				b, _ := json.Marshal(req)
				rdb.ZAdd(ctx, tc.queue, redis.Z{Score: -1, Member: string(b)})
			}
			rdb.ZAdd(ctx, tc.queue, redis.Z{Score: -1, Member: `{"url":"http://a.com/x","appid":"testapp","crawlid":"other","priority":1}`})
			key := "timeout:link:testapp:ist234"
			rdb.Set(ctx, key, deadline.Unix(), 0)

			// Before the deadline nothing happens and the key stays.
			if handled, err := f.Process(ctx, key); handled || err != nil {
				t.Fatalf("handled %v, %v before the deadline", handled, err)
			}
			if rdb.Exists(ctx, key).Val() != 1 || rdb.ZCard(ctx, tc.queue).Val() != 85 || len(f.Published()) != 0 {
				t.Fatal("acted before the deadline")
			}

			f.Clock = deadline.Add(time.Second)
			if handled, err := f.Process(ctx, key); !handled || err != nil {
				t.Fatalf("handled %v, %v after the deadline", handled, err)
			}
			f.ExpectOnlyAnswer(t, `{"total_expired": 84, "server_time": 1767323106, "crawlid": "ist234",
				"spiderid": "link", "appid": "testapp", "action": "expired"}`)
			if n := rdb.ZCard(ctx, tc.queue).Val(); n != 1 {
				t.Fatalf("%d requests left, want the other crawl's 1", n)
			}
			if !rdb.SIsMember(ctx, "link:blacklist", "testapp||ist234").Val() || rdb.Exists(ctx, key).Val() != 0 {
				t.Fatal("not blacklisted, or timeout key left")
			}
		})
	}
}

func TestExpireRejectsAValueThatIsNoTime(t *testing.T) {
	rdb := plugintest.Redis(t)
	f := plugintest.Setup(t, &expire.Monitor{}, rdb, nil, nil)
	rdb.Set(context.Background(), "timeout:link:a:b", "soon", 0)
	if _, err := f.Process(context.Background(), "timeout:link:a:b"); err == nil {
		t.Fatal("no error for a value that is not a time")
	}
}

// An expire of a crawl with a ledger notifies exactly as the original,
// counts the purged requests (purged:expire) and records the expire, so the
// crawl-complete that follows says "expired".
func TestExpireOfACrawlWithALedgerCountsThePurgeAndEndsIt(t *testing.T) {
	f, rdb := plugintest.Start(t, &expire.Monitor{})
	ctx := context.Background()
	if err := ledger.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	deadline := f.Clock.Add(time.Minute)
	crawl := ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "ist234"}
	pipe := rdb.Pipeline()
	for i := range 12 {
		ledger.QueueSeed(ctx, pipe, "link:a.com:queue", -1,
			fmt.Sprintf(`{"url":"http://a.com/%d","appid":"testapp","crawlid":"ist234","priority":1,"expires":%d}`, i, deadline.Unix()), crawl, f.Clock, time.Hour)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	key := "timeout:link:testapp:ist234"
	rdb.Set(ctx, key, deadline.Unix(), 0)
	f.Clock = deadline.Add(time.Second)
	if handled, err := f.Process(ctx, key); !handled || err != nil {
		t.Fatalf("handled %v, %v after the deadline", handled, err)
	}
	f.ExpectOnlyAnswer(t, `{"total_expired": 12, "server_time": 1767323106, "crawlid": "ist234",
		"spiderid": "link", "appid": "testapp", "action": "expired"}`)
	ps, err := ledger.Read(ctx, rdb, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if p := ps[0]; p.Purged["expire"] != 12 || p.Done != 12 || p.Queued != 0 || p.EndedBy != "expire" {
		t.Fatalf("progress %+v, want 12 purged by the expire, done, ended by it", p)
	}
	fs, err := ledger.NewCompleter(rdb, "monitor", time.Hour).Claim(ctx)
	if err != nil || len(fs) != 1 || fs[0].Progress.Reason() != "expired" {
		t.Fatalf("the completer claimed %+v (%v), want the crawl, expired", fs, err)
	}
}
