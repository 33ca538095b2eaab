package scraper_test

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/scraper"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

func TestValidateRefusesRenderValuesTheCrawlersCannotCarryOut(t *testing.T) {
	for _, tc := range []struct{ name, raw, reason string }{
		{"a number", crawl(`, "render": 1`), `at '/render': got number, want boolean or object`},
		{"a string", crawl(`, "render": "yes"`), `at '/render': got string, want boolean or object`},
		{"null", crawl(`, "render": null`), `at '/render': got null, want boolean or object`},
		{"an unknown option", crawl(`, "render": {"wait_for": "#app", "screenshot": true}`), `at '/render': additional properties 'screenshot' not allowed`},
		{"an empty selector", crawl(`, "render": {"wait_for": ""}`), `at '/render/wait_for': minLength: got 0, want 1`},
		{"a blank selector", crawl(`, "render": {"wait_for": "  "}`), `render: wait_for: want a CSS selector (a non-empty string)`},
		{"a selector that is not a string", crawl(`, "render": {"wait_for": 3}`), `at '/render/wait_for': got number, want string`},
		{"a negative wait", crawl(`, "render": {"wait_ms": -1}`), `at '/render/wait_ms': minimum: got -1, want 0`},
		{"a fractional wait", crawl(`, "render": {"wait_ms": 1.5}`), `at '/render/wait_ms': got number, want integer`},
		{"a wait over the maximum", crawl(`, "render": {"wait_ms": 300001, "timeout": 300}`), `at '/render/wait_ms': maximum: got 300,001, want 300,000`},
		{"a zero timeout", crawl(`, "render": {"timeout": 0}`), `render: timeout: want seconds above 0, at most 300`},
		{"a timeout over the maximum", crawl(`, "render": {"timeout": 301}`), `at '/render/timeout': maximum: got 301, want 300`},
		{"a timeout that is a string", crawl(`, "render": {"timeout": "30"}`), `at '/render/timeout': got string, want number`},
		{"a wait as long as the timeout", crawl(`, "render": {"wait_ms": 5000, "timeout": 5}`), `render: wait_ms 5000 is not below the timeout (5s): every render would end at its timeout`},
		{"a wait as long as the default timeout", crawl(`, "render": {"wait_ms": 30000}`), `render: wait_ms 30000 is not below the timeout (30s)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := plugintest.Validate(t, &scraper.Handler{}, tc.raw)
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("got %v, want a reason holding %q", err, tc.reason)
			}
		})
	}
}

func TestValidateAcceptsEveryRenderValueTheCrawlersRender(t *testing.T) {
	for _, raw := range []string{
		crawl(`, "render": true`),
		crawl(`, "render": false`),
		crawl(`, "render": {}`),
		crawl(`, "render": {"wait_for": "#app a.item"}`),
		crawl(`, "render": {"wait_ms": 0}`),
		crawl(`, "render": {"timeout": 7.5}`),
		crawl(`, "render": {"wait_for": "main", "wait_ms": 299000, "timeout": 300}`),
	} {
		if _, err := plugintest.Validate(t, &scraper.Handler{}, raw); err != nil {
			t.Errorf("Validate(%s) = %v, want it accepted", raw, err)
		}
	}
}

// A render request waits in its domain's render queue, which no plain
// crawler (ours or the original's) scans, with everything an ordinary
// request gets: its member as written, its seed counted once in the
// crawl's ledger, the queue announced.
func TestHandleQueuesARenderRequestInItsRenderQueue(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	ctx := context.Background()
	received := subscribe(t, c, "link")
	h := newHandler(t, c)
	for _, raw := range []string{
		`{"url":"http://www.example.com/app","appid":"testapp","crawlid":"r1","priority":9,"render":{"wait_for":"#app a","timeout":10}}`,
		`{"url":"http://www.example.com/app","appid":"testapp","crawlid":"r1","priority":9,"render":{"timeout":10,"wait_for":"#app a"}}`, // the same, fed again
		`{"url":"http://example.com/other","appid":"testapp","crawlid":"r1","render":true}`,
	} {
		if err := handle(t, h, c, request(t, raw)); err != nil {
			t.Fatal(err)
		}
	}
	renderQueue := rediskeys.RenderQueueKey("link", "example.com")
	zs := c.ZRangeWithScores(ctx, renderQueue, 0, -1).Val()
	// -priority, plus the tiebreak below 1 that keeps a priority FIFO.
	if len(zs) != 2 || math.Floor(zs[0].Score) != -9 || math.Floor(zs[1].Score) != -1 {
		t.Fatalf("%s = %v, want the two requests scored -9 and -1 (and a fraction)", renderQueue, zs)
	}
	member := zs[0].Member.(string)
	if !strings.Contains(member, `"render":{"timeout":10,"wait_for":"#app a"}`) || !strings.Contains(member, `"crawlid":"r1"`) {
		t.Errorf("member %s does not carry the render value and the crawl", member)
	}
	if n := c.Exists(ctx, rediskeys.QueueKey("link", "example.com")).Val(); n != 0 {
		t.Errorf("the ordinary queue exists: a plain crawler would fetch a render request")
	}
	var plain []string
	for _, k := range queueKeys(t, c) {
		if _, _, ok := rediskeys.ParseQueueKey(k); ok {
			plain = append(plain, k)
		}
	}
	if len(plain) != 0 {
		t.Errorf("keys a plain crawler pops from: %v", plain)
	}
	ps, err := ledger.Read(ctx, c, ledger.Crawl{SpiderID: "link", AppID: "testapp", CrawlID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if p := ps[0]; p == nil || p.Seeds != 2 || p.Queued != 2 || p.State != ledger.StateRunning {
		t.Errorf("r1's progress %+v, want 2 seeds queued (the member fed twice counted once)", p)
	}
	if got, want := received(), []string{renderQueue}; !reflect.DeepEqual(got, want) {
		t.Errorf("announced %v, want %v", got, want)
	}
}

// render false is a plain fetch: the request goes to the ordinary queue,
// with the field as fed.
func TestHandleQueuesARequestWithRenderFalseAsAnOrdinaryOne(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	req := request(t, `{"url":"http://example.com/","appid":"testapp","crawlid":"p1","render":false}`)
	if err := handle(t, newHandler(t, c), c, req); err != nil {
		t.Fatal(err)
	}
	members := c.ZRange(context.Background(), rediskeys.QueueKey("link", "example.com"), 0, -1).Val()
	if len(members) != 1 || !strings.Contains(members[0], `"render":false`) {
		t.Errorf("link:example.com:queue holds %q, want the request with render false", members)
	}
	if n := c.Exists(context.Background(), rediskeys.RenderQueueKey("link", "example.com")).Val(); n != 0 {
		t.Error("a render queue exists for a request with render false")
	}
}
