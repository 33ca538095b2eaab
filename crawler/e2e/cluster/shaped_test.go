package cluster_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
)

// extracted is a result's extracted field.
func extracted(tb testing.TB, m map[string]any) map[string]any {
	tb.Helper()
	x, ok := m["extracted"].(map[string]any)
	if !ok {
		tb.Fatalf("result of %v has no extracted: %v", m["url"], m["extracted"])
	}
	return x
}

// awaitURLs waits for a result of crawlID for each of urls and returns them by url.
func awaitURLs(tb testing.TB, t *topic, crawlID string, urls []string) map[string]map[string]any {
	tb.Helper()
	got := map[string]map[string]any{}
	waitFor(tb, "results of "+crawlID+" for "+strings.Join(urls, ", "), 60*time.Second, func() bool {
		for _, m := range t.all(byCrawl(crawlID)) {
			got[m["url"].(string)] = m
		}
		for _, u := range urls {
			if got[u] == nil {
				return false
			}
		}
		return true
	})
	return got
}

func TestShapedRequestsSessionsAndExtraction(t *testing.T) {
	site := testsite.StartAt(t, "127.0.0.1:0")
	c := newCluster(t, harness.RedisOptions{}, nil)
	crawled := c.watch("crawled_firehose")

	// A POST seed arrives with its method, body and headers; the links it
	// finds arrive as GETs with the headers; the rules read every page.
	c.feed(map[string]any{
		"url": site.URL("/echo/0"), "appid": appID, "crawlid": "shaped", "maxdepth": 2,
		"method": "POST", "body": "q=lamps&page=1",
		"headers": map[string]string{"X-Token": "secret-1", "Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html"},
		"extract": map[string]any{
			"method": map[string]any{"css": "#method"},
			"body":   map[string]any{"xpath": "//pre[@id='body']"},
			"token":  map[string]any{"css": `li.header[data-name="X-Token"]`},
			"next":   map[string]any{"css": "a", "attr": "href"},
			"title":  map[string]any{"regex": "<title>Echo (\\d+)</title>"},
			"first":  map[string]any{"css": "title", "url_regex": "/echo/0$"},
		},
	})
	echo := []string{site.URL("/echo/0"), site.URL("/echo/1"), site.URL("/echo/2")}
	got := awaitURLs(t, crawled, "shaped", echo)
	for i, u := range echo {
		x := extracted(t, got[u])
		wantMethod, wantBody := "GET", ""
		if i == 0 {
			wantMethod, wantBody = "POST", "q=lamps&page=1"
		}
		if x["method"] != wantMethod || x["token"] != "secret-1" || x["title"] != string(rune('0'+i)) {
			t.Errorf("%s: extracted %v, want method %s and the token", u, x, wantMethod)
		}
		if x["body"] != wantBody {
			t.Errorf("%s: body %v, want %q", u, x["body"], wantBody)
		}
		if _, has := x["first"]; has != (i == 0) {
			t.Errorf("%s: url_regex rule applied: %v", u, has)
		}
		if i < 2 && x["next"] != echo[i+1] {
			t.Errorf("%s: next %v, want the absolute %s", u, x["next"], echo[i+1])
		}
	}
	for _, h := range site.HitsFor("/echo/1") {
		if h.Method != "GET" {
			t.Errorf("a found link was fetched with %s", h.Method)
		}
	}

	// Without a session the account refuses; with one, a login POST seed
	// continues logged in on every page.
	login := map[string]any{
		"url": site.URL("/login"), "appid": appID, "maxdepth": 1, "method": "POST", "body": "user=alice&password=secret",
		"headers": map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
		"extract": map[string]any{"name": map[string]any{"css": "h1.name"}, "ld": map[string]any{"jsonld": true}},
	}
	login["crawlid"] = "nosession"
	c.feed(login)
	refused := awaitURLs(t, crawled, "nosession", []string{site.URL("/login")})[site.URL("/login")]
	if refused["status_code"] != 403.0 || refused["response_url"] != site.URL("/account/") {
		t.Errorf("without a session: %v at %v, want the site's 403", refused["status_code"], refused["response_url"])
	}
	login["crawlid"], login["session"] = "loggedin", true
	c.feed(login)
	var accountURLs []string
	for _, p := range testsite.AccountPages {
		accountURLs = append(accountURLs, site.URL(p))
	}
	pages := awaitURLs(t, crawled, "loggedin", append([]string{site.URL("/login")}, accountURLs[1:]...))
	for u, m := range pages {
		x := extracted(t, m)
		if m["status_code"] != 200.0 || !strings.HasPrefix(x["name"].(string), "Product ") || len(x["ld"].([]any)) != 1 {
			t.Errorf("logged in, %s: status %v, extracted %v", u, m["status_code"], x)
		}
	}

	// A second crawler shares the crawl's jar: the first one stops, and
	// the second, told apart by its user agent, crawls the account with
	// the cookie the first one's login got.
	if err := c.proc("crawler").Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.start("crawler-2", "crawler", "--spider", "link", "--set", "USER_AGENT=second-crawler")
	c.feed(map[string]any{"url": site.URL("/account/3?again"), "appid": appID, "crawlid": "loggedin", "session": true})
	again := awaitURLs(t, crawled, "loggedin", []string{site.URL("/account/3?again")})[site.URL("/account/3?again")]
	if again["status_code"] != 200.0 {
		t.Errorf("the second crawler was refused: %v", again["status_code"])
	}
	for _, h := range site.HitsFor("/account/3") {
		if h.UserAgent == "second-crawler" && !strings.Contains(h.Cookie, testsite.AuthCookie+"="+testsite.AuthValue) {
			t.Errorf("the second crawler sent cookie %q", h.Cookie)
		}
	}
	if !slices.ContainsFunc(site.HitsFor("/account/3"), func(h testsite.Hit) bool { return h.UserAgent == "second-crawler" }) {
		t.Error("the second crawler did not fetch /account/3")
	}
	for _, p := range c.procs {
		if out := p.Output().String(); strings.Contains(out, testsite.AuthValue) {
			t.Errorf("%s logged a session cookie", p.Name())
		}
	}
}

// badRules are requests with rules no path may accept, with what the
// refusal must say.
var badRules = []struct{ name, rules, reason string }{
	{"invalid CSS", `{"title": {"css": "a["}}`, `extract.title: css "a[": `},
	{"invalid XPath", `{"price": {"xpath": "//p[@class="}}`, `extract.price: xpath "//p[@class=": `},
	{"invalid regex", `{"sku": {"regex": "(a"}}`, `extract.sku: regex "(a": error parsing regexp`},
	{"two kinds in one rule", `{"both": {"css": "a", "regex": "a"}}`, `extract.both: has css and regex: want exactly one`},
	{"an owned header", `{}, "headers": {"Host": "x.example"}`, `headers: Host is the cluster's to send`},
}

func TestBadRulesAndHeadersAreRefusedOnEveryPath(t *testing.T) {
	c := newCluster(t, harness.RedisOptions{}, nil)
	cfg := kafkaclient.Config{Brokers: c.kafka.Addrs, TopicPrefix: "demo", ConnTimeout: 5 * time.Second}
	for i, tc := range badRules {
		raw := `{"url": "http://127.0.0.1:9/", "appid": "` + appID + `", "crawlid": "bad` + string(rune('a'+i)) + `", "extract": ` + tc.rules + `}`
		// REST /feed: 400 with the reason.
		resp, err := http.Post(c.restURL("/feed"), "application/json", strings.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		var answer struct{ Error struct{ Cause string } }
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(answer.Error.Cause, tc.reason) {
			t.Errorf("%s: /feed answered %d %+v, want 400 saying %q", tc.name, resp.StatusCode, answer, tc.reason)
		}
		// kafka-monitor feed: exit status 2 with the reason.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, binary(t, "kafka-monitor"), "feed", raw)
		cmd.Env, cmd.Dir = c.environ(), t.TempDir()
		out, err := cmd.CombinedOutput()
		cancel()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), tc.reason) {
			t.Errorf("%s: kafka-monitor feed: %v\n%s", tc.name, err, out)
		}
		// kafka-monitor run: the message, put on the topic as is, is
		// rejected with the reason and counted.
		w := cfg.NewWriter(cfg.Topic("incoming"))
		w.BatchSize = 1
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := w.WriteMessages(wctx, kafka.Message{Value: []byte(raw)}); err != nil {
			t.Fatal(err)
		}
		wcancel()
		_ = w.Close()
		waitFor(t, "kafka-monitor run to reject "+tc.name, 20*time.Second, func() bool {
			// The log is JSON lines: the reason's quotes are escaped.
			return c.proc("kafka-monitor").Output().Contains("Request rejected: " + strings.ReplaceAll(tc.reason, `"`, `\"`))
		})
	}
	waitFor(t, "the rejections counted", 20*time.Second, func() bool {
		keys, _ := c.rdb.Keys(context.Background(), "stats:kafka-monitor:fail:*").Result()
		for _, k := range keys {
			if n, _ := c.rdb.ZCard(context.Background(), k).Result(); n >= int64(len(badRules)) {
				return true
			}
			if n, _ := c.rdb.Get(context.Background(), k).Int64(); n >= int64(len(badRules)) {
				return true
			}
		}
		return false
	})
}

// Two crawlers running at once share one logged-in crawl: whichever pops a
// page sends the cookie the login got, so every account page is a 200, and
// both crawlers fetch pages of it.
func TestTwoCrawlersCrawlOneSessionAtOnce(t *testing.T) {
	site := testsite.StartAt(t, "127.0.0.1:0")
	c := newCluster(t, harness.RedisOptions{}, map[string]string{"USER_AGENT": "first-crawler"})
	c.start("crawler-2", "crawler", "--spider", "link", "--set", "USER_AGENT=second-crawler")
	crawled := c.watch("crawled_firehose")

	c.feed(map[string]any{
		"url": site.URL("/login"), "appid": appID, "crawlid": "together", "session": true, "maxdepth": 1, "method": "POST",
		"body": "user=alice&password=secret", "headers": map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
	})
	var urls []string
	for _, p := range testsite.AccountPages[1:] {
		urls = append(urls, site.URL(p))
	}
	awaitURLs(t, crawled, "together", append([]string{site.URL("/login")}, urls...))

	// Batches of account pages, each its own URL, until both crawlers
	// fetched some (each pops from the crawl's one queue as it can).
	fetchedBy := func() map[string]int {
		by := map[string]int{}
		for _, p := range testsite.AccountPages {
			for _, h := range site.HitsFor(p) {
				if strings.HasPrefix(h.Query, "batch") {
					by[h.UserAgent]++
				}
			}
		}
		return by
	}
	for batch := 0; fetchedBy()["first-crawler"] == 0 || fetchedBy()["second-crawler"] == 0; batch++ {
		if batch == 8 {
			t.Fatalf("after %d batches the crawlers fetched %v, want both", batch, fetchedBy())
		}
		var pages []string
		for i := range 12 {
			u := site.URL(testsite.AccountPages[i%len(testsite.AccountPages)] + "?batch" + strconv.Itoa(batch) + "-" + strconv.Itoa(i))
			c.postFeed(map[string]any{"url": u, "appid": appID, "crawlid": "together", "session": true})
			pages = append(pages, u)
		}
		urls = append(urls, pages...)
		awaitURLs(t, crawled, "together", pages)
	}
	t.Logf("account pages fetched by user agent: %v", fetchedBy())

	for _, m := range crawled.all(byCrawl("together")) {
		if m["status_code"] != 200.0 {
			t.Errorf("%v: status %v, want 200 with the session's cookie", m["url"], m["status_code"])
		}
	}
	for _, p := range testsite.AccountPages {
		for _, h := range site.HitsFor(p) {
			if !strings.Contains(h.Cookie, testsite.AuthCookie+"="+testsite.AuthValue) {
				t.Errorf("%s fetched %s?%s with cookie %q", h.UserAgent, p, h.Query, h.Cookie)
			}
		}
	}
	for _, name := range []string{"crawler", "crawler-2"} {
		if c.proc(name).Exited() {
			t.Errorf("%s exited during the crawl", name)
		}
	}
}
