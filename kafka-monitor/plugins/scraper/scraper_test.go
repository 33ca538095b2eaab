package scraper_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/scraper"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest/crawlrequesttest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// request builds a request the way the monitor does.
func request(t testing.TB, raw string) plugin.Request {
	t.Helper()
	return plugintest.Request(t, &scraper.Handler{}, raw) // only its schema
}

// newHandler is a handler set up as the monitor sets it up, with c.
func newHandler(t testing.TB, c *redis.Client) *scraper.Handler {
	t.Helper()
	h := &scraper.Handler{}
	plugintest.Setup(t, h, c, ledger.Settings(), nil)
	return h
}

// handle runs h on one pipeline, executes it and confirms the request was
// stored, as the monitor does.
func handle(t *testing.T, h plugin.Plugin, c *redis.Client, req plugin.Request) error {
	t.Helper()
	return plugintest.Handle(t, h, c, req)
}

// dump is everything in Redis (harness.RedisContents).
func dump(t *testing.T, c *redis.Client) map[string]any {
	t.Helper()
	return harness.RedisContents(t, c)
}

// queueKeys are the keys in Redis but the crawl ledger's (checked on their own).
func queueKeys(t *testing.T, c *redis.Client) []string {
	t.Helper()
	var out []string
	for _, k := range c.Keys(context.Background(), "*").Val() {
		if !strings.HasPrefix(k, "ledger:") {
			out = append(out, k)
		}
	}
	return out
}

func TestHandleQueuesTheFilledRequestWithScoreMinusPriority(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	req := request(t, `{"url":"http://example.com","appid":"testapp","crawlid":"abc123","priority":5}`)
	if err := handle(t, newHandler(t, c), c, req); err != nil {
		t.Fatal(err)
	}

	zs := c.ZRangeWithScores(context.Background(), "link:example.com:queue", 0, -1).Val()
	if len(zs) != 1 || zs[0].Score != -5+1.0/(1<<32) {
		t.Fatalf("link:example.com:queue = %v, want one member with score -5 + 2^-32 (-priority, then the first tiebreak)", zs)
	}
	member := zs[0].Member.(string)
	want := plugintest.DecodeNumbers(t, `{"url":"http://example.com","appid":"testapp","crawlid":"abc123",
		"spiderid":"link","priority":5,"maxdepth":0,"domain_max_pages":null,"allowed_domains":null,
		"allow_regex":null,"deny_regex":null,"deny_extensions":null,"expires":0,"useragent":null,
		"cookie":null,"attrs":null}`)
	if got := plugintest.DecodeNumbers(t, member); !reflect.DeepEqual(got, want) {
		t.Errorf("member = %s\nwant the request with every default: %v", member, want)
	}
	if encoded, _ := json.Marshal(req); member != string(encoded) {
		t.Errorf("member = %s, want the JSON of the filled request %s", member, encoded)
	}
	if keys := queueKeys(t, c); len(keys) != 1 {
		t.Errorf("keys = %v, want only the queue (expires 0 sets no timeout)", keys)
	}
}

func TestHandleQueuesEveryFieldAsGiven(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	raw := `{"url":"https://www.example.com/a?b=c","appid":"testapp","crawlid":"abc123","spiderid":"wandering",
		"priority":100,"maxdepth":3,"domain_max_pages":2000,"allowed_domains":["example.com","example.org"],
		"allow_regex":[".*news.*"],"deny_regex":[".*login.*"],"deny_extensions":["pdf"],"expires":1893456000,
		"useragent":"Mozilla/5.0 ☃","cookie":"a=b; c=d","attrs":{"nested":{"list":[1,2.5,null,"😀"]},"n":-7}}`
	if err := handle(t, newHandler(t, c), c, request(t, raw)); err != nil {
		t.Fatal(err)
	}
	zs := c.ZRangeWithScores(context.Background(), "wandering:example.com:queue", 0, -1).Val()
	if len(zs) != 1 || math.Floor(zs[0].Score) != -100 {
		t.Fatalf("wandering:example.com:queue = %v, want one member with score -100 and a tiebreak", zs)
	}
	if got, want := plugintest.DecodeNumbers(t, zs[0].Member.(string)), plugintest.DecodeNumbers(t, raw); !reflect.DeepEqual(got, want) {
		t.Errorf("member = %v\nwant exactly the request %v", got, want)
	}
	if got := c.Get(context.Background(), "timeout:wandering:testapp:abc123").Val(); got != "1893456000" {
		t.Errorf("timeout:wandering:testapp:abc123 = %q, want 1893456000", got)
	}
}

// The shared fixtures of the Kafka Monitor's form are what it wrote for
// each fed request before it used the shared codec: the bytes must stay.
func TestHandleWritesTheSharedFixturesOfTheKafkaMonitorsFormByteForByte(t *testing.T) {
	r := harness.StartRedis(t)
	c := r.TestClient(t)
	n := 0
	for _, m := range crawlrequesttest.Load(t) {
		if m.Fed == "" {
			continue
		}
		n++
		t.Run(m.Name, func(t *testing.T) {
			if err := r.FlushAll(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := handle(t, newHandler(t, c), c, request(t, m.Fed)); err != nil {
				t.Fatal(err)
			}
			key, err := rediskeys.QueueKeyForURL(m.Request.SpiderID, m.Request.URL)
			if err != nil {
				t.Fatal(err)
			}
			members := c.ZRange(context.Background(), key, 0, -1).Val()
			if len(members) != 1 || members[0] != m.Member {
				t.Errorf("%s holds\n%q\nwant\n%q", key, members, m.Member)
			}
		})
	}
	if n == 0 {
		t.Fatal("no fixture of the Kafka Monitor's form")
	}
}

// An expires the schema takes but no float holds would be queued for
// crawlers that cannot read it: it is refused at the door.
func TestHandleRejectsAnExpiresBeyondAnyFloat(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	req := request(t, `{"url":"http://example.com","appid":"testapp","crawlid":"abc123","expires":1`+strings.Repeat("0", 400)+`}`)
	err := handle(t, newHandler(t, c), c, req)
	if !plugin.IsReject(err) || !strings.Contains(err.Error(), "expires is not a number") {
		t.Fatalf("Handle = %v, want a rejection saying expires is not a number", err)
	}
	if got := dump(t, c); len(got) != 0 {
		t.Errorf("Redis holds %v after a rejected request, want nothing", got)
	}
}

func TestHandleSetsTimeoutKeyOnlyWhenExpiresIsNotZero(t *testing.T) {
	r := harness.StartRedis(t)
	c := r.TestClient(t)
	for _, tc := range []struct {
		name, expires string
		want          string // "" for no timeout key
	}{
		{"absent (default 0)", "", ""},
		{"zero", "0", ""},
		// The original reads -0 as the integer 0 and sets no key.
		{"minus zero", "-0", ""},
		{"epoch seconds", "1893456000", "1893456000"},
		{"negative", "-1", "-1"},
		{"beyond 64 bits, kept as written", "1000000000000000000000000000000", "1000000000000000000000000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.FlushAll(context.Background()); err != nil {
				t.Fatal(err)
			}
			raw := `{"url":"http://example.com","appid":"testapp","crawlid":"abc123"`
			if tc.expires != "" {
				raw += `,"expires":` + tc.expires
			}
			if err := handle(t, newHandler(t, c), c, request(t, raw+"}")); err != nil {
				t.Fatal(err)
			}
			got, err := c.Get(context.Background(), rediskeys.TimeoutKey("link", "testapp", "abc123")).Result()
			switch {
			case tc.want == "" && err != redis.Nil:
				t.Errorf("timeout:link:testapp:abc123 = %q (err %v), want no key", got, err)
			case tc.want != "" && got != tc.want:
				t.Errorf("timeout:link:testapp:abc123 = %q (err %v), want %q", got, err, tc.want)
			}
		})
	}
}

func TestHandleOrdersTheQueueByPriority(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	h := newHandler(t, c)
	for _, p := range []string{"1", "100", "50"} {
		raw := `{"url":"http://example.com/` + p + `","appid":"testapp","crawlid":"c` + p + `","priority":` + p + `}`
		if err := handle(t, h, c, request(t, raw)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, z := range c.ZRangeWithScores(context.Background(), "link:example.com:queue", 0, -1).Val() {
		got = append(got, fmt.Sprintf("%s@%v", plugintest.DecodeNumbers(t, z.Member.(string))["crawlid"], math.Floor(z.Score)))
	}
	if want := []string{"c100@-100", "c50@-50", "c1@-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("queue in pop order = %v, want %v", got, want)
	}
}

func TestHandleKeysTheQueueByRegisteredDomain(t *testing.T) {
	r := harness.StartRedis(t)
	c := r.TestClient(t)
	for _, tc := range []struct{ url, spider, key string }{
		{"http://example.com", "", "link:example.com:queue"},
		{"https://www.example.co.uk/path?q=1#f", "", "link:example.co.uk:queue"},
		{"http://WWW.Example.COM/", "", "link:example.com:queue"},
		{"http://127.0.0.1:8080/page", "", "link:127.0.0.1.:queue"},
		{"http://localhost/", "", "link:localhost.:queue"},
		{"http://example.com", "wandering", "wandering:example.com:queue"},
	} {
		t.Run(tc.key+" for "+tc.url, func(t *testing.T) {
			if err := r.FlushAll(context.Background()); err != nil {
				t.Fatal(err)
			}
			raw := `{"url":"` + tc.url + `","appid":"testapp","crawlid":"abc123"`
			if tc.spider != "" {
				raw += `,"spiderid":"` + tc.spider + `"`
			}
			if err := handle(t, newHandler(t, c), c, request(t, raw+"}")); err != nil {
				t.Fatal(err)
			}
			if keys := queueKeys(t, c); !reflect.DeepEqual(keys, []string{tc.key}) {
				t.Errorf("keys = %v, want [%s]", keys, tc.key)
			}
		})
	}
}

func TestHandleRejectsURLsWithoutHTTPHost(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	for _, url := range []string{"ftp://example.com/file", "http://", "not a url", "", "/relative/path", "mailto:a@example.com", "http://%zz"} {
		t.Run(strconv.Quote(url), func(t *testing.T) {
			req := request(t, `{"url":"`+url+`","appid":"testapp","crawlid":"abc123","expires":1893456000}`)
			err := handle(t, newHandler(t, c), c, req)
			if !plugin.IsReject(err) {
				t.Errorf("Handle(url %q) = %v, want a rejection", url, err)
			}
			if got := dump(t, c); len(got) != 0 {
				t.Errorf("Redis holds %v after a rejected request, want nothing", got)
			}
		})
	}
}

// subscribe listens on the spider's announce channel; the returned func
// collects the messages published up to a marker the test publishes itself,
// so no fixed wait is needed to know that nothing else came.
func subscribe(t *testing.T, c *redis.Client, spider string) func() []string {
	t.Helper()
	ctx := context.Background()
	channel := rediskeys.QueueChannel(spider)
	ps := harness.Subscribe(t, c, channel)
	return func() []string {
		t.Helper()
		const marker = "--end of test messages--"
		if err := c.Publish(ctx, channel, marker).Err(); err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			msg, err := ps.ReceiveMessage(rctx)
			cancel()
			if err != nil {
				t.Fatalf("receive on %s: %v (so far %v)", channel, err, got)
			}
			if msg.Payload == marker {
				return got
			}
			got = append(got, msg.Payload)
		}
	}
}

func TestHandleAnnouncesANewQueueOnceWithinTheInterval(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	received := subscribe(t, c, "link")
	h := newHandler(t, c)
	for _, raw := range []string{
		`{"url":"http://example.com/1","appid":"testapp","crawlid":"c1"}`,
		`{"url":"http://example.com/2","appid":"testapp","crawlid":"c2"}`,
		`{"url":"http://example.org/","appid":"testapp","crawlid":"c3"}`,
		`{"url":"http://www.example.com/3","appid":"testapp","crawlid":"c4"}`,
		`{"url":"http://example.com/4","appid":"testapp","crawlid":"c5","spiderid":"wandering"}`,
	} {
		if err := handle(t, h, c, request(t, raw)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"link:example.com:queue", "link:example.org:queue"}
	if got := received(); !reflect.DeepEqual(got, want) {
		t.Errorf("announced on %s: %v, want %v (each new queue once)", rediskeys.QueueChannel("link"), got, want)
	}
}

// The monitor runs Handle again when the pipeline's write failed; the
// queue the failed write would have announced must still be announced.
func TestHandleAnnouncesAgainWhenTheFirstWriteFailed(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	received := subscribe(t, c, "link")
	h := newHandler(t, c)
	req := request(t, `{"url":"http://example.com","appid":"testapp","crawlid":"abc123"}`)

	failed := c.Pipeline()
	if _, err := h.Handle(context.Background(), req, failed); err != nil {
		t.Fatal(err)
	}
	failed.Discard() // as if Redis had been unreachable: nothing was written
	h.NotStored(req) // what the monitor says then

	if err := handle(t, h, c, req); err != nil {
		t.Fatal(err)
	}
	if got, want := received(), []string{"link:example.com:queue"}; !reflect.DeepEqual(got, want) {
		t.Errorf("announced %v after the retry, want %v", got, want)
	}
}

func TestHandleTwiceLeavesTheSameState(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	h := newHandler(t, c)
	req := request(t, `{"url":"http://example.com","appid":"testapp","crawlid":"abc123","priority":7,"expires":1893456000,"attrs":{"b":1,"a":[2]}}`)
	if err := handle(t, h, c, req); err != nil {
		t.Fatal(err)
	}
	first := dump(t, c)
	// The queue, the timeout key, the ledger and its three index sets.
	if len(first) != 6 {
		t.Fatalf("after one Handle Redis holds %v, want the queue, the timeout key and the crawl's ledger", first)
	}
	if err := handle(t, h, c, req); err != nil {
		t.Fatal(err)
	}
	if second := dump(t, c); !reflect.DeepEqual(first, second) {
		t.Errorf("after a repeated Handle Redis holds\n%v\nwant as after the first\n%v", second, first)
	}
	// A fresh handler (a restarted monitor) writes the same bytes too.
	if err := handle(t, newHandler(t, c), c, request(t, `{"attrs":{"a":[2],"b":1},"expires":1893456000,"priority":7,"crawlid":"abc123","appid":"testapp","url":"http://example.com"}`)); err != nil {
		t.Fatal(err)
	}
	if third := dump(t, c); !reflect.DeepEqual(first, third) {
		t.Errorf("the same request with its fields in another order left\n%v\nwant\n%v", third, first)
	}
}

func TestHandleCountsTheSeedInItsCrawlsLedgerWithTheQueueWrite(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	h := newHandler(t, c)
	before := time.Now().Add(-time.Second)
	for _, raw := range []string{
		`{"url":"http://example.com/1","appid":"testapp","crawlid":"abc123","spiderid":"wandering"}`,
		`{"url":"http://example.org/2","appid":"testapp","crawlid":"abc123","spiderid":"wandering"}`,
		`{"url":"http://example.com/1","appid":"testapp","crawlid":"abc123","spiderid":"wandering"}`, // the same member again
		`{"url":"http://example.com/1","appid":"testapp","crawlid":"other","spiderid":"wandering"}`,
	} {
		if err := handle(t, h, c, request(t, raw)); err != nil {
			t.Fatal(err)
		}
	}
	crawl := ledger.Crawl{SpiderID: "wandering", AppID: "testapp", CrawlID: "abc123"}
	ps, err := ledger.Read(ctx, c, crawl, ledger.Crawl{SpiderID: "wandering", AppID: "testapp", CrawlID: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if p := ps[0]; p == nil || p.Seeds != 2 || p.Queued != 2 || p.Done != 0 || p.State != ledger.StateRunning {
		t.Fatalf("abc123's progress %+v, want 2 seeds queued (the member fed twice counted once), running", p)
	}
	if p := ps[1]; p == nil || p.Seeds != 1 {
		t.Fatalf("other's progress %+v, want 1 seed", p)
	}
	if started := ps[0].Started; started < float64(before.Unix()) || started > float64(time.Now().Unix()+1) {
		t.Errorf("started %v, want about now", started)
	}
	if ttl := c.TTL(ctx, crawl.Key()).Val(); ttl <= ledger.DefaultTTL-time.Minute || ttl > ledger.DefaultTTL {
		t.Errorf("the ledger lives %v, want LEDGER_TTL's default %v", ttl, ledger.DefaultTTL)
	}
	for _, key := range []string{rediskeys.LedgerActiveKey, rediskeys.LedgerCrawlsKey, rediskeys.LedgerAppCrawlsKey("testapp")} {
		if got := c.ZRange(ctx, key, 0, -1).Val(); !slices.Contains(got, crawl.Member()) || len(got) != 2 {
			t.Errorf("%s = %v, want both crawls", key, got)
		}
	}
}

// A Redis restarted without its script cache has nothing to answer
// NOSCRIPT for: the script goes whole with the queue writes, so the
// request is stored and counted at the first attempt.
func TestHandleStoresTheRequestOnARedisThatLostItsScripts(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	h := newHandler(t, c)
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	req := request(t, `{"url":"http://example.com","appid":"testapp","crawlid":"abc123"}`)
	if err := handle(t, h, c, req); err != nil {
		t.Fatal(err)
	}
	if n := c.ZCard(ctx, "link:example.com:queue").Val(); n != 1 {
		t.Errorf("queue holds %d, want 1", n)
	}
	if got := c.HGet(ctx, ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "abc123"}.Key(), ledger.FieldSeeds).Val(); got != "1" {
		t.Errorf("seeds = %q, want 1", got)
	}
}

// The monitor hands a pipeline's crawl requests to one Batch: they are
// queued by one script, each counted once, as if handled one by one.
func TestABatchQueuesAPipelinesRequestsWithOneScript(t *testing.T) {
	r := harness.StartRedis(t)
	c := r.TestClient(t)
	ctx := context.Background()
	raws := []string{
		`{"url":"http://example.com/1","appid":"testapp","crawlid":"c1","priority":9,"expires":1893456000}`,
		`{"url":"http://example.org/2","appid":"testapp","crawlid":"c1"}`,
		`{"url":"http://example.com/3","appid":"other","crawlid":"c2","spiderid":"wandering"}`,
		`{"url":"http://example.com/1","appid":"testapp","crawlid":"c1","priority":9,"expires":1893456000}`, // the same member again
	}
	queues := func() map[string]any {
		out := dump(t, c)
		for k := range out {
			if strings.HasPrefix(k, "ledger:") {
				delete(out, k)
			}
		}
		return out
	}
	h := newHandler(t, c)
	for _, raw := range raws {
		if err := handle(t, h, c, request(t, raw)); err != nil {
			t.Fatal(err)
		}
	}
	oneByOne := queues()
	if err := r.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}

	received := subscribe(t, c, "link")
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	reqs := make([]plugin.Request, len(raws))
	for i, raw := range raws {
		reqs[i] = request(t, raw)
	}
	if err := plugintest.HandleBatch(t, newHandler(t, c), c, reqs); err != nil {
		t.Fatal(err)
	}
	info := c.Info(ctx, "commandstats").Val()
	if !strings.Contains(info, "cmdstat_eval:calls=1,") || strings.Contains(info, "cmdstat_evalsha:") {
		t.Errorf("the pipeline ran other than one script for %d requests:\n%s", len(raws), info)
	}
	if got := queues(); !reflect.DeepEqual(got, oneByOne) {
		t.Errorf("after the batch Redis holds\n%v\nwant as after the requests one by one\n%v", got, oneByOne)
	}
	ps, err := ledger.Read(ctx, c, ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "c1"},
		ledger.Crawl{SpiderID: "wandering", AppID: "other", CrawlID: "c2"})
	if err != nil {
		t.Fatal(err)
	}
	if ps[0] == nil || ps[0].Seeds != 2 || ps[1] == nil || ps[1].Seeds != 1 {
		t.Errorf("progress %+v and %+v, want 2 seeds (the member given twice counted once) and 1", ps[0], ps[1])
	}
	if got, want := received(), []string{"link:example.com:queue", "link:example.org:queue"}; !reflect.DeepEqual(got, want) {
		t.Errorf("announced %v, want %v", got, want)
	}
}

// A pipeline given up before Flush (another request's Handle failed)
// writes nothing of what its Batch noted.
func TestABatchDroppedBeforeFlushWritesNothing(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	pipe := c.Pipeline()
	b := newHandler(t, c).NewBatch()
	if _, err := b.Handle(ctx, request(t, `{"url":"http://example.com","appid":"testapp","crawlid":"c1","expires":1893456000}`), pipe); err != nil {
		t.Fatal(err)
	}
	pipe.Set(ctx, "other", "1", 0) // so that the pipeline runs
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, c); !reflect.DeepEqual(got, map[string]any{"other": "1"}) {
		t.Errorf("Redis holds %v, want only the other write", got)
	}
}

// Requests of one priority come out of their queue in the order they were
// fed, whatever their crawls: within one batch in the batch's order, then
// batch after batch (FIFO within a priority); higher priorities first.
func TestHandleQueuesOnePriorityInTheOrderFed(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	h := newHandler(t, c)
	var want []string
	n := 0
	feed := func(batch []string) {
		b := h.NewBatch()
		pipe := c.TxPipeline()
		for _, crawl := range batch {
			priority := "5"
			if crawl == "urgent" {
				priority = "9"
			}
			n++
			raw := `{"url":"http://example.com/` + strconv.Itoa(n) + `","appid":"testapp","crawlid":"` + crawl + `","priority":` + priority + `}`
			if _, err := b.Handle(context.Background(), request(t, raw), pipe); err != nil {
				t.Fatal(err)
			}
			if crawl != "urgent" {
				want = append(want, crawl+"/"+strconv.Itoa(n))
			}
		}
		if err := b.Flush(context.Background(), pipe); err != nil {
			t.Fatal(err)
		}
		if _, err := pipe.Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	feed([]string{"z", "a", "z", "m", "a", "urgent"})
	feed([]string{"a", "z"})
	feed([]string{"m"})
	var got []string
	for _, m := range c.ZRange(context.Background(), "link:example.com:queue", 0, -1).Val() {
		r := plugintest.DecodeNumbers(t, m)
		got = append(got, fmt.Sprint(r["crawlid"], "/", strings.TrimPrefix(r["url"].(string), "http://example.com/")))
	}
	if len(got) == 0 || got[0] != "urgent/6" {
		t.Fatalf("queue %v: the higher priority does not come first", got)
	}
	if got = got[1:]; !slices.Equal(got, want) {
		t.Errorf("queue in pop order %v, want the order fed %v", got, want)
	}
}
