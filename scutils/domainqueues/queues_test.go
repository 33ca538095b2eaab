package domainqueues_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainqueues"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

var redisServer harness.SharedRedis

func TestMain(m *testing.M) { redisServer.Main(m) }

func TestParseReadsFlatAndMetaRequests(t *testing.T) {
	for member, want := range map[string]domainqueues.Entry{
		`{"url":"http://a.com","appid":"app","crawlid":"c1","priority":-9,"expires":1452094703}`: {AppID: "app", CrawlID: "c1", Priority: "-9", Expires: "1452094703"},
		`{"url":"http://a.com","meta":{"appid":"app","crawlid":"c2","priority":10}}`:             {AppID: "app", CrawlID: "c2", Priority: "10"},
		`{"appid":"app","crawlid":"c3"}`: {AppID: "app", CrawlID: "c3"},
	} {
		got, ok := domainqueues.Parse(member)
		want.Member = member
		if !ok || got != want {
			t.Errorf("Parse(%s) = %+v, %v; want %+v", member, got, ok, want)
		}
	}
	for _, bad := range []string{`not json`, `[1,2]`, `{"appid":"a"}`, `{"crawlid":"c"}`, `{"meta":{"url":"x"}}`, `{"appid":1,"crawlid":"c"}`} {
		if _, ok := domainqueues.Parse(bad); ok {
			t.Errorf("Parse(%s) accepted", bad)
		}
	}
}

// client is a client of an emptied server.
func client(t *testing.T) *redis.Client {
	t.Helper()
	if err := redisServer.FlushAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	return redisServer.TestClient(t)
}

func seed(t *testing.T, rdb *redis.Client, key string, members ...string) {
	t.Helper()
	for i, m := range members {
		if err := rdb.ZAdd(context.Background(), key, redis.Z{Score: float64(-i), Member: m}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func req(appid, crawlid string, n int) string {
	return fmt.Sprintf(`{"url":"http://x/%d","appid":%q,"crawlid":%q,"priority":1}`, n, appid, crawlid)
}

func TestScanVisitsEverySpiderQueueAndSkipsOthers(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	seed(t, rdb, "link:a.com:queue", req("app", "c1", 1), req("app", "c2", 2), "garbage")
	seed(t, rdb, "link:127.0.0.1.:queue", req("app", "c1", 3))
	seed(t, rdb, "other:a.com:queue", req("app", "c1", 4))
	rdb.Set(ctx, "link:b.com:queue", "a string, not a queue", 0)
	var seen []string
	skipped := 0
	err := domainqueues.Scan(ctx, rdb, "link", func(q domainqueues.Queue) error {
		seen = append(seen, fmt.Sprintf("%s=%d", q.Domain, len(q.Entries)))
		skipped += q.Skipped
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(seen)
	if fmt.Sprint(seen) != "[127.0.0.1.=1 a.com=2]" || skipped != 1 {
		t.Fatalf("seen %v, skipped %d", seen, skipped)
	}
}

func TestPurgeRemovesOnlyTheCrawlsRequests(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	for d := range 150 { // more queues than one pipelined batch
		key := fmt.Sprintf("link:d%d.com:queue", d)
		seed(t, rdb, key, req("app", "stopme", d), req("app", "keep", d), req("other", "stopme", d),
			fmt.Sprintf(`{"url":"http://y/%d","meta":{"appid":"app","crawlid":"stopme"}}`, d))
	}
	n, err := domainqueues.Purge(ctx, rdb, "link", "app", "stopme", ledger.PurgedStop, time.Now())
	if err != nil || n != 300 {
		t.Fatalf("purged %d, %v; want 300", n, err)
	}
	left := 0
	err = domainqueues.Scan(ctx, rdb, "link", func(q domainqueues.Queue) error {
		for _, e := range q.Entries {
			if e.AppID == "app" && e.CrawlID == "stopme" {
				t.Errorf("left in %s: %s", q.Key, e.Member)
			}
			left++
		}
		return nil
	})
	if err != nil || left != 300 {
		t.Fatalf("%d requests left, %v; want 300 of other crawls", left, err)
	}
}

// The crawl's ledger counts what the purge removed, in the same step, even
// when Redis forgot the ledger's scripts (NOSCRIPT) and for a queue holding
// more of the crawl than one script call takes.
func TestPurgeCountsThePurgedInTheCrawlsLedger(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	crawl := ledger.Crawl{SpiderID: "link", AppID: "app", CrawlID: "stopme"}
	var members []string
	for i := range 1100 {
		members = append(members, fmt.Sprintf(`{"url":"http://big/%d","appid":"app","crawlid":"stopme"}`, i))
	}
	seed(t, rdb, "link:big.com:queue", members...)
	for d := range 150 {
		seed(t, rdb, fmt.Sprintf("link:d%d.com:queue", d), req("app", "stopme", d), req("app", "keep", d))
	}
	var tl ledger.Tally
	tl.Enqueued(crawl, 1250+2) // two more in flight somewhere
	pipe := rdb.TxPipeline()
	tl.Write(ctx, pipe, time.Now(), time.Hour)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	n, err := domainqueues.Purge(ctx, rdb, "link", "app", "stopme", ledger.PurgedExpire, time.Now())
	if err != nil || n != 1250 {
		t.Fatalf("purged %d, %v; want 1250", n, err)
	}
	ps, err := ledger.Read(ctx, rdb, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if p := ps[0]; p.Purged["expire"] != 1250 || p.Done != 1250 || p.Queued != 2 {
		t.Fatalf("progress %+v, want 1250 purged by the expire and done, 2 left", p)
	}
}
