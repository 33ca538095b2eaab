package info_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/plugins/info"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// queue adds n requests of a crawl to a domain queue, with a priority and
// optional expires, as the Kafka Monitor queues them (score -priority).
func queue(t *testing.T, rdb *redis.Client, domain, appid, crawlid string, priority, n int, expires int64) {
	t.Helper()
	for i := range n {
		req := map[string]any{"url": fmt.Sprintf("http://%s/%s/%d/%d", domain, crawlid, priority, i), "appid": appid, "crawlid": crawlid, "priority": priority, "spiderid": "link"}
		if expires != 0 {
			req["expires"] = expires
		}
		b, _ := json.Marshal(req)
		if err := rdb.ZAdd(context.Background(), "link:"+domain+":queue", redis.Z{Score: float64(-priority), Member: string(b)}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// decode reads a JSON document (a spec example) as the published answers are read.
func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func only(t *testing.T, f *plugintest.Fixture) map[string]any {
	t.Helper()
	got := f.Published()
	if len(got) != 1 {
		t.Fatalf("published %d answers, want 1: %v", len(got), got)
	}
	return got[0]
}

// ask sets an info request key to uuid, has the plugin process it and
// returns its one answer.
func ask(t *testing.T, f *plugintest.Fixture, rdb *redis.Client, key, uuid string) map[string]any {
	t.Helper()
	ctx := context.Background()
	rdb.Set(ctx, key, uuid, 0)
	if _, err := f.Process(ctx, key); err != nil {
		t.Fatal(err)
	}
	return only(t, f)
}

// assertAnswer fails the test unless got is the JSON document want.
func assertAnswer(t *testing.T, got map[string]any, want string) {
	t.Helper()
	if !reflect.DeepEqual(got, decode(t, want)) {
		gb, _ := json.MarshalIndent(got, "", " ")
		t.Fatalf("answer:\n%s", gb)
	}
}

func TestAppInfoHasTheSpecsShape(t *testing.T) {
	f, rdb := plugintest.Start(t, &info.Monitor{})
	ctx := context.Background()
	// The spec's example, smaller: crawl ist234 with an expiry, crawl ABC123
	// spread over domains with several priorities; another app's crawl and
	// another spider's queue must not count.
	queue(t, rdb, "google.com", "testapp", "ist234", -9, 1, 1452094703)
	queue(t, rdb, "twitter.com", "testapp", "ist234", -9, 6, 1452094703)
	queue(t, rdb, "ctvnews.ca", "testapp", "ABC123", -19, 2, 0)
	queue(t, rdb, "quora.com", "testapp", "ABC123", -29, 1, 0)
	queue(t, rdb, "quora.com", "testapp", "ABC123", -19, 3, 0)
	queue(t, rdb, "quora.com", "otherapp", "ABC123", 50, 4, 0)
	rdb.ZAdd(ctx, "wandering:quora.com:queue", redis.Z{Score: 1, Member: `{"appid":"testapp","crawlid":"ABC123","priority":1}`})
	rdb.Set(ctx, "info:link:testapp", "abc12333", 0)

	if handled, err := f.Process(ctx, "info:link:testapp"); !handled || err != nil {
		t.Fatalf("handled %v, %v", handled, err)
	}
	assertAnswer(t, only(t, f), `{
		"server_time": 1767323045, "uuid": "abc12333",
		"total_pending": 13, "total_domains": 4, "total_crawlids": 2,
		"spiderid": "link", "appid": "testapp",
		"crawlids": {
			"ist234": {
				"domains": {
					"google.com": {"low_priority": -9, "high_priority": -9, "total": 1},
					"twitter.com": {"low_priority": -9, "high_priority": -9, "total": 6}
				},
				"distinct_domains": 2, "expires": 1452094703, "total": 7
			},
			"ABC123": {
				"domains": {
					"ctvnews.ca": {"low_priority": -19, "high_priority": -19, "total": 2},
					"quora.com": {"low_priority": -29, "high_priority": -19, "total": 4}
				},
				"distinct_domains": 2, "total": 6
			}
		}
	}`)
	if n := rdb.Exists(ctx, "info:link:testapp").Val(); n != 0 {
		t.Fatal("request key left behind")
	}
}

func TestCrawlInfoHasTheSpecsShape(t *testing.T) {
	f, rdb := plugintest.Start(t, &info.Monitor{})
	queue(t, rdb, "duckduckgo.com", "testapp", "ABC123", -19, 2, 0)
	queue(t, rdb, "wikipedia.org", "testapp", "ABC123", -19, 1, 0)
	queue(t, rdb, "wikipedia.org", "testapp", "other", -19, 5, 0)
	got := ask(t, f, rdb, "info:link:testapp:ABC123", "abc12333")
	assertAnswer(t, got, `{
		"server_time": 1767323045, "crawlid": "ABC123",
		"total_pending": 3, "total_domains": 2,
		"spiderid": "link", "appid": "testapp",
		"domains": {
			"duckduckgo.com": {"low_priority": -19, "high_priority": -19, "total": 2},
			"wikipedia.org": {"low_priority": -19, "high_priority": -19, "total": 1}
		},
		"uuid": "abc12333"
	}`)
}

func TestCrawlInfoReportsTheCrawlsExpiry(t *testing.T) {
	f, rdb := plugintest.Start(t, &info.Monitor{})
	ctx := context.Background()
	rdb.Set(ctx, "timeout:link:testapp:ABC123", "1452094703", 0)
	got := ask(t, f, rdb, "info:link:testapp:ABC123", "u1")
	if got["expires"] != "1452094703" || got["total_pending"] != 0.0 || len(got["domains"].(map[string]any)) != 0 {
		t.Fatalf("answer %v", got)
	}
}

func TestBadKeyIsAnError(t *testing.T) {
	f, rdb := plugintest.Start(t, &info.Monitor{})
	rdb.Set(context.Background(), "info:link:a:b:c", "u1", 0)
	if _, err := f.Process(context.Background(), "info:link:a:b:c"); err == nil {
		t.Fatal("no error for a five-part key")
	}
	if len(f.Published()) != 0 {
		t.Fatal("published an answer for a bad key")
	}
}

var t0 = time.Unix(1767323000, 0)

// seed queues a request as the Kafka Monitor does: in its domain queue and
// counted in its crawl's ledger.
func seed(t *testing.T, rdb *redis.Client, domain string, c ledger.Crawl, n, priority int) {
	t.Helper()
	ctx := context.Background()
	if err := ledger.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	pipe := rdb.Pipeline()
	for i := range n {
		b, _ := json.Marshal(map[string]any{"url": fmt.Sprintf("http://%s/%s/%d", domain, c.CrawlID, i), "appid": c.AppID, "crawlid": c.CrawlID, "priority": priority, "spiderid": c.SpiderID})
		ledger.QueueSeed(ctx, pipe, c.SpiderID+":"+domain+":queue", float64(-priority), string(b), c, t0, time.Hour)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// crawlDone pops n of the crawl's requests from a domain queue and counts
// them fetched (200) and published, as a crawler does.
func crawlDone(t *testing.T, rdb *redis.Client, domain string, c ledger.Crawl, n int, at time.Time) {
	t.Helper()
	ctx := context.Background()
	if err := rdb.ZPopMin(ctx, c.SpiderID+":"+domain+":queue", int64(n)).Err(); err != nil {
		t.Fatal(err)
	}
	harness.CrawlerTally(t, rdb, c, 0, n, at)
}

// lease pops one request of the crawl and leases it to a crawler.
func lease(t *testing.T, rdb *redis.Client, domain string, c ledger.Crawl) {
	t.Helper()
	ctx := context.Background()
	queue := c.SpiderID + ":" + domain + ":queue"
	zs, err := rdb.ZPopMin(ctx, queue, 1).Result()
	if err != nil || len(zs) != 1 {
		t.Fatalf("pop %s: %v %v", queue, zs, err)
	}
	record := throttle.Record{Queue: queue, Score: fmt.Sprint(zs[0].Score), Member: fmt.Sprint(zs[0].Member)}
	if err := rdb.HSet(ctx, rediskeys.LeaseKey(c.SpiderID)+":items", fmt.Sprint(zs[0].Member), record.String()).Err(); err != nil {
		t.Fatal(err)
	}
}

// A crawl with a ledger answers every field the original does, exactly, and
// its progress: what was queued, what is left in the queues and leased,
// what became of the rest.
func TestCrawlInfoOfACrawlWithALedgerAddsItsProgress(t *testing.T) {
	f, rdb := plugintest.Start(t, &info.Monitor{})
	c := ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "ABC123"}
	seed(t, rdb, "duckduckgo.com", c, 4, 19)
	seed(t, rdb, "wikipedia.org", c, 2, 19)
	crawlDone(t, rdb, "duckduckgo.com", c, 1, t0.Add(10*time.Second))
	lease(t, rdb, "duckduckgo.com", c)
	seed(t, rdb, "wikipedia.org", ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "other"}, 5, 19)
	got := ask(t, f, rdb, "info:link:testapp:ABC123", "abc12333")
	assertAnswer(t, got, `{
		"server_time": 1767323045, "crawlid": "ABC123",
		"total_pending": 4, "total_domains": 2,
		"spiderid": "link", "appid": "testapp",
		"domains": {
			"duckduckgo.com": {"low_priority": 19, "high_priority": 19, "total": 2},
			"wikipedia.org": {"low_priority": 19, "high_priority": 19, "total": 2}
		},
		"uuid": "abc12333",
		"progress": {
			"state": "running", "seeds": 6, "enqueued": 0, "queued": 4, "in_flight": 1,
			"fetched": 1, "status_codes": {"200": 1}, "published": 1, "published_truncated": 0,
			"retried": 0, "dropped": {}, "refused": {}, "purged": {}, "done": 1,
			"started": 1767323000, "last_activity": 1767323010
		}
	}`)
}

// An appid answer's crawlids stay exactly the original's (crawls with
// pending requests, ledger or not); the app's crawls of the spider with a
// ledger get their progress in "progress", finished ones too.
func TestAppInfoAddsTheProgressOfTheAppsCrawlsWithALedger(t *testing.T) {
	f, rdb := plugintest.Start(t, &info.Monitor{})
	running := ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "running"}
	finished := ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "finished"}
	seed(t, rdb, "a.com", running, 2, 5)
	seed(t, rdb, "b.com", finished, 1, 5)
	crawlDone(t, rdb, "b.com", finished, 1, t0.Add(time.Second))
	queue(t, rdb, "a.com", "testapp", "python", 3, 1, 0)                                             // fed by the original: no ledger
	seed(t, rdb, "a.com", ledger.Crawl{SpiderID: "link", AppID: "otherapp", CrawlID: "x"}, 1, 5)     // another app
	seed(t, rdb, "a.com", ledger.Crawl{SpiderID: "wandering", AppID: "testapp", CrawlID: "w"}, 1, 5) // another spider
	got := ask(t, f, rdb, "info:link:testapp", "u1")
	assertAnswer(t, got, `{
		"server_time": 1767323045, "uuid": "u1",
		"total_pending": 3, "total_domains": 1, "total_crawlids": 2,
		"spiderid": "link", "appid": "testapp",
		"crawlids": {
			"running": {"domains": {"a.com": {"low_priority": 5, "high_priority": 5, "total": 2}}, "distinct_domains": 1, "total": 2},
			"python": {"domains": {"a.com": {"low_priority": 3, "high_priority": 3, "total": 1}}, "distinct_domains": 1, "total": 1}
		},
		"progress": {
			"running": {
				"state": "running", "seeds": 2, "enqueued": 0, "queued": 2, "in_flight": 0,
				"fetched": 0, "status_codes": {}, "published": 0, "published_truncated": 0,
				"retried": 0, "dropped": {}, "refused": {}, "purged": {}, "done": 0,
				"started": 1767323000, "last_activity": 1767323000
			},
			"finished": {
				"state": "running", "seeds": 1, "enqueued": 0, "queued": 0, "in_flight": 0,
				"fetched": 1, "status_codes": {"200": 1}, "published": 1, "published_truncated": 0,
				"retried": 0, "dropped": {}, "refused": {}, "purged": {}, "done": 1,
				"started": 1767323000, "last_activity": 1767323001
			}
		}
	}`)
}

// An app with more crawls than MaxAppProgress gets the progress of its
// newest ones only, so that the answer fits a Kafka message.
func TestAppInfoGivesTheProgressOfTheNewestCrawlsOnly(t *testing.T) {
	f, rdb := plugintest.Start(t, &info.Monitor{})
	ctx := context.Background()
	n := info.MaxAppProgress + 5
	pipe := rdb.TxPipeline()
	for i := range n {
		var tl ledger.Tally
		tl.Enqueued(ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: fmt.Sprintf("c%d", i)}, 1)
		tl.Enqueued(ledger.Crawl{SpiderID: "wandering", AppID: "testapp", CrawlID: fmt.Sprintf("w%d", i)}, 1)
		tl.Write(ctx, pipe, t0.Add(time.Duration(i)*time.Second), time.Hour)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	got := ask(t, f, rdb, "info:link:testapp", "u1")
	progress, _ := got["progress"].(map[string]any)
	if len(progress) != info.MaxAppProgress {
		t.Fatalf("progress of %d crawls, want %d", len(progress), info.MaxAppProgress)
	}
	for i := range 5 {
		if progress[fmt.Sprintf("c%d", i)] != nil {
			t.Errorf("the oldest crawl c%d is in the answer", i)
		}
	}
	if progress[fmt.Sprintf("c%d", n-1)] == nil {
		t.Error("the newest crawl is missing")
	}
}

// renderQueue adds n render requests of a crawl to a domain's render
// queue, as the Kafka Monitor queues them.
func renderQueue(t *testing.T, rdb *redis.Client, domain, appid, crawlid string, priority, n int) {
	t.Helper()
	for i := range n {
		member := fmt.Sprintf(`{"appid":%q,"crawlid":%q,"priority":%d,"render":true,"spiderid":"link","url":"http://%s/r/%d"}`,
			appid, crawlid, priority, domain, i)
		if err := rdb.ZAdd(context.Background(), rediskeys.RenderQueueKey("link", domain), redis.Z{Score: float64(-priority), Member: member}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// Render requests wait for a rendering crawler: info counts them in
// total_pending and in their domain's entry, beside the domain's ordinary
// requests, in a crawl's answer and in an app's.
func TestInfoCountsTheRenderRequests(t *testing.T) {
	for _, tc := range []struct {
		name      string
		queue     func(t *testing.T, rdb *redis.Client)
		key, want string
	}{
		{"crawl", func(t *testing.T, rdb *redis.Client) {
			queue(t, rdb, "spa.example", "testapp", "ABC123", 5, 1, 0)
			renderQueue(t, rdb, "spa.example", "testapp", "ABC123", 7, 2)
			renderQueue(t, rdb, "app.example", "testapp", "ABC123", 1, 3)
			renderQueue(t, rdb, "app.example", "testapp", "other", 1, 4)
		}, "info:link:testapp:ABC123", `{
			"server_time": 1767323045, "crawlid": "ABC123",
			"total_pending": 6, "total_domains": 2,
			"spiderid": "link", "appid": "testapp",
			"domains": {
				"spa.example": {"low_priority": 5, "high_priority": 7, "total": 3},
				"app.example": {"low_priority": 1, "high_priority": 1, "total": 3}
			},
			"uuid": "u1"
		}`},
		{"app", func(t *testing.T, rdb *redis.Client) {
			queue(t, rdb, "spa.example", "testapp", "c1", 5, 1, 0)
			renderQueue(t, rdb, "spa.example", "testapp", "c1", 5, 2)
			renderQueue(t, rdb, "app.example", "testapp", "c2", 1, 3)
			renderQueue(t, rdb, "app.example", "otherapp", "c2", 1, 4)
		}, "info:link:testapp", `{
			"server_time": 1767323045, "uuid": "u1",
			"total_pending": 6, "total_domains": 2, "total_crawlids": 2,
			"spiderid": "link", "appid": "testapp",
			"crawlids": {
				"c1": {"domains": {"spa.example": {"low_priority": 5, "high_priority": 5, "total": 3}}, "distinct_domains": 1, "total": 3},
				"c2": {"domains": {"app.example": {"low_priority": 1, "high_priority": 1, "total": 3}}, "distinct_domains": 1, "total": 3}
			}
		}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, rdb := plugintest.Start(t, &info.Monitor{})
			tc.queue(t, rdb)
			assertAnswer(t, ask(t, f, rdb, tc.key, "u1"), tc.want)
		})
	}
}
