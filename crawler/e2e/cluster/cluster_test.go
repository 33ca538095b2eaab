// Package cluster_test runs the whole cluster - the kafka-monitor,
// redis-monitor, crawler and rest binaries as separate processes - against a
// real redis-server, a real ZooKeeper and the kfake broker, crawling the
// loopback test site, through the spec's user journeys.
package cluster_test

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

const appID = "e2eapp"

// notFile is Scrapy's default deny_extensions as far as the test site goes.
func notFile(link string) bool {
	return !strings.Contains(link, "/files/") && !strings.Contains(link, "/static/")
}

// crawledURLs returns how many results each url of crawlID got.
func crawledURLs(t *topic, crawlID string) map[string]int {
	counts := map[string]int{}
	for _, m := range t.all(byCrawl(crawlID)) {
		u, _ := m["url"].(string)
		counts[u]++
	}
	return counts
}

// expectCrawl waits for a result of every url of want for crawlID.
func expectCrawl(tb testing.TB, t *topic, crawlID string, want []string, timeout time.Duration) {
	tb.Helper()
	waitFor(tb, fmt.Sprintf("%d results of crawl %s", len(want), crawlID), timeout, func() bool {
		got := crawledURLs(t, crawlID)
		for _, u := range want {
			if got[u] == 0 {
				return false
			}
		}
		return true
	})
}

// exactCrawl checks that crawlID's results are exactly want, once each.
func exactCrawl(tb testing.TB, t *topic, crawlID string, want []string) {
	tb.Helper()
	got := crawledURLs(t, crawlID)
	var gotURLs []string
	for u, n := range got {
		gotURLs = append(gotURLs, u)
		if n != 1 {
			tb.Errorf("crawl %s: %s has %d results, want 1", crawlID, u, n)
		}
	}
	slices.Sort(gotURLs)
	if !slices.Equal(gotURLs, want) {
		tb.Errorf("crawl %s fetched\n%s\nwant\n%s", crawlID, strings.Join(gotURLs, "\n"), strings.Join(want, "\n"))
	}
}

// checkResult checks every field of a crawl result.
//
// links: the seed (depth 0) has links, pages at the crawl's maxdepth have
// none (the link spider extracts links only below maxdepth); inner are the
// pages below maxdepth.
func checkResult(tb testing.TB, m map[string]any, crawlID string, attrs map[string]any, seed string, inner []string) {
	tb.Helper()
	what := "crawl result " + fmt.Sprint(m["url"])
	has(tb, what, m, map[string]string{
		"url": "string", "response_url": "string", "status_code": "number", "status_msg": "string",
		"response_headers": "object", "request_headers": "object", "body": "string", "links": "array",
		"attrs": "any", "appid": "string", "crawlid": "string", "timestamp": "string", "encoding": "string",
	})
	if tb.Failed() {
		tb.FailNow()
	}
	if m["appid"] != appID || m["crawlid"] != crawlID {
		tb.Errorf("%s: appid %v crawlid %v, want %s %s", what, m["appid"], m["crawlid"], appID, crawlID)
	}
	if m["status_code"] != 200.0 || m["status_msg"] != "OK" {
		tb.Errorf("%s: status %v %v, want 200 OK", what, m["status_code"], m["status_msg"])
	}
	if m["response_url"] != m["url"] {
		tb.Errorf("%s: response_url %v", what, m["response_url"])
	}
	if !strings.Contains(strings.ToLower(m["body"].(string)), "<html") {
		tb.Errorf("%s: body is not the page: %.200s", what, m["body"])
	}
	nLinks := len(m["links"].([]any))
	if m["url"] == seed && nLinks == 0 {
		tb.Errorf("%s: the seed has no links", what)
	}
	if !slices.Contains(inner, m["url"].(string)) && nLinks != 0 {
		tb.Errorf("%s: %d links at maxdepth, want none", what, nLinks)
	}
	for _, l := range m["links"].([]any) {
		lm, ok := l.(map[string]any)
		if !ok || lm["url"] == nil {
			tb.Errorf("%s: link %v is not {url, text}", what, l)
			break
		}
	}
	if !strings.EqualFold(m["encoding"].(string), "utf-8") {
		tb.Errorf("%s: encoding %v, want utf-8", what, m["encoding"])
	}
	if m["timestamp"] == "" {
		tb.Errorf("%s: empty timestamp", what)
	}
	rh := m["response_headers"].(map[string]any)
	if fmt.Sprint(rh["Content-Type"]) == "<nil>" && fmt.Sprint(rh["content-type"]) == "<nil>" {
		tb.Errorf("%s: no Content-Type in response_headers %v", what, rh)
	}
	if len(m["request_headers"].(map[string]any)) == 0 {
		tb.Errorf("%s: empty request_headers", what)
	}
	// As the original's crawler writes them: every header, request and
	// response, a list of strings.
	for _, field := range []string{"request_headers", "response_headers"} {
		for name, v := range m[field].(map[string]any) {
			values, ok := v.([]any)
			if ok {
				for _, s := range values {
					if _, isString := s.(string); !isString {
						ok = false
					}
				}
			}
			if !ok || len(values) == 0 {
				tb.Errorf("%s: %s %q is %v, want a list of strings", what, field, name, v)
			}
		}
	}
	if attrs == nil {
		if m["attrs"] != nil {
			tb.Errorf("%s: attrs %v, want null", what, m["attrs"])
		}
	} else if fmt.Sprint(m["attrs"]) != fmt.Sprint(attrs) {
		tb.Errorf("%s: attrs %v, want %v", what, m["attrs"], attrs)
	}
}

// hostOf is the host name of a URL.
func hostOf(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// TestCrawlFeedAndREST feeds one crawl with `kafka-monitor feed` and one
// through REST POST /feed and checks that each reaches demo.crawled_firehose
// (and demo.crawled_<appid>) with every field, fetching exactly the pages
// maxdepth, allowed_domains, allow/deny regexes and the duplicate filter
// allow; then asks every stats type and checks the answers' shapes on
// demo.outbound_firehose and demo.outbound_<appid>.
func TestCrawlFeedAndREST(t *testing.T) {
	a := testsite.StartAt(t, "127.0.0.1:0")
	b := testsite.StartAt(t, "127.0.0.2:0")
	a.SetPeers(b.URL("/"))
	c := newCluster(t, harness.RedisOptions{}, map[string]string{"KAFKA_APPID_TOPICS": "true"})
	crawled := c.watch("crawled_firehose")
	crawledApp := c.watch("crawled_" + appID)
	outbound := c.watch("outbound_firehose")
	outboundApp := c.watch("outbound_" + appID)

	// 1. kafka-monitor feed, with filters.
	allow := []string{`/page/`, `/allow/`}
	deny := []string{`/page/2`, `/allow/2$`}
	attrs := map[string]any{"source": "e2e", "n": 1.0}
	c.feed(map[string]any{
		"url": a.URL("/"), "appid": appID, "crawlid": "feed1", "spiderid": "link", "maxdepth": 2,
		"allowed_domains": []string{"127.0.0.1"}, "allow_regex": allow, "deny_regex": deny, "attrs": attrs,
	})
	follow := func(link string) bool {
		if !notFile(link) || hostOf(link) != "127.0.0.1" {
			return false
		}
		for _, d := range deny {
			if regexp.MustCompile(d).MatchString(link) {
				return false
			}
		}
		for _, p := range allow {
			if regexp.MustCompile(p).MatchString(link) {
				return true
			}
		}
		return false
	}
	wantFeed := testsite.Reachable(a.URL("/"), 2, follow, a, b)

	// 2. REST POST /feed, no filters (depth 1 from /page/1: its parent "/" and children).
	ans := c.postFeed(map[string]any{"url": a.URL("/page/1"), "appid": appID, "crawlid": "rest1", "maxdepth": 1})
	if ans["error"] != nil {
		t.Fatalf("POST /feed crawl: %v", ans)
	}
	wantREST := testsite.Reachable(a.URL("/page/1"), 1, notFile, a, b)

	expectCrawl(t, crawled, "feed1", wantFeed, 60*time.Second)
	expectCrawl(t, crawled, "rest1", wantREST, 60*time.Second)
	c.drained(30 * time.Second)
	// A short observation after the queues emptied: nothing further arrives.
	time.Sleep(500 * time.Millisecond)
	exactCrawl(t, crawled, "feed1", wantFeed)
	exactCrawl(t, crawled, "rest1", wantREST)
	for _, m := range crawled.all(byCrawl("feed1")) {
		checkResult(t, m, "feed1", attrs, a.URL("/"), testsite.Reachable(a.URL("/"), 1, follow, a, b))
	}
	for _, m := range crawled.all(byCrawl("rest1")) {
		checkResult(t, m, "rest1", nil, a.URL("/page/1"), []string{a.URL("/page/1")})
	}
	// The appid topic carries the same results.
	waitFor(t, "the results on the appid topic", 10*time.Second, func() bool {
		return len(crawledApp.all(byCrawl("feed1"))) == len(wantFeed) && len(crawledApp.all(byCrawl("rest1"))) == len(wantREST)
	})

	// 3. Every stats type, fed with kafka-monitor feed.
	window := func(what string, m map[string]any) {
		t.Helper()
		windows(t, what, m)
	}
	statsAnswer := func(stats string) map[string]any {
		t.Helper()
		uuid := "stats-" + stats
		c.feed(map[string]any{"stats": stats, "appid": appID, "uuid": uuid})
		m := outbound.await(t, "the "+stats+" stats", 30*time.Second, byUUID(uuid))
		outboundApp.await(t, "the "+stats+" stats", 10*time.Second, byUUID(uuid))
		has(t, stats, m, map[string]string{"server_time": "number", "uuid": "string", "appid": "string", "stats": "string"})
		if m["stats"] != stats || m["appid"] != appID {
			t.Errorf("%s stats: stats %v appid %v", stats, m["stats"], m["appid"])
		}
		return m
	}
	monitor := func(what string, m map[string]any, plugins ...string) {
		t.Helper()
		nodes(t, what, m)
		window(what+" total", obj(t, m, "total"))
		if f, ok := m["fail"]; ok {
			window(what+" fail", f.(map[string]any))
		}
		ps := obj(t, m, "plugins")
		for _, p := range plugins {
			if _, ok := ps[p]; !ok {
				t.Errorf("%s: no plugin %s in %s", what, p, brief(ps))
			}
		}
		for name := range ps {
			window(what+" plugin "+name, obj(t, ps, name))
		}
	}
	spiders := func(what string, s map[string]any) {
		t.Helper()
		has(t, what, s, map[string]string{"unique_spider_count": "number", "total_spider_count": "number", "link": "object"})
		link := obj(t, s, "link")
		if link["count"] != 1.0 {
			t.Errorf("%s: link count %v, want 1", what, link["count"])
		}
		if c200, ok := link["200"].(map[string]any); !ok || c200["lifetime"] == nil {
			t.Errorf("%s: link has no 200 lifetime count: %s", what, brief(link))
		} else {
			window(what+" link 200", c200)
		}
	}
	machines := func(what string, m map[string]any) {
		t.Helper()
		if m["count"] != 1.0 {
			t.Errorf("%s: machine count %v, want 1", what, m["count"])
		}
		for host, v := range m {
			if host == "count" {
				continue
			}
			codes, ok := v.(map[string]any)
			if !ok {
				t.Errorf("%s: machine %s is %T", what, host, v)
				continue
			}
			for code, w := range codes {
				window(what+" "+host+" "+code, w.(map[string]any))
			}
		}
	}
	queues := func(what string, q map[string]any) {
		t.Helper()
		has(t, what, q, map[string]string{"total_backlog": "number"})
		for k, v := range q {
			if k == "total_backlog" {
				continue
			}
			has(t, what+" "+k, v.(map[string]any), map[string]string{"domains": "array", "spider_backlog": "number", "num_domains": "number"})
		}
	}

	km := statsAnswer("kafka-monitor")
	monitor("kafka-monitor stats", km, "ScraperHandler", "StatsHandler")
	rm := statsAnswer("redis-monitor")
	monitor("redis-monitor stats", rm, "StatsMonitor")
	spiders("spider stats", obj(t, statsAnswer("spider"), "spiders"))
	machines("machine stats", obj(t, statsAnswer("machine"), "machines"))
	queues("queue stats", obj(t, statsAnswer("queue"), "queues"))
	cr := statsAnswer("crawler")
	spiders("crawler stats", obj(t, cr, "spiders"))
	machines("crawler stats", obj(t, cr, "machines"))
	queues("crawler stats", obj(t, cr, "queue"))
	nodes(t, "rest stats", statsAnswer("rest"))
	all := statsAnswer("all")
	monitor("all kafka-monitor", obj(t, all, "kafka-monitor"))
	monitor("all redis-monitor", obj(t, all, "redis-monitor"))
	nodes(t, "all rest", obj(t, all, "rest"))
	ac := obj(t, all, "crawler")
	spiders("all crawler", obj(t, ac, "spiders"))
	machines("all crawler", obj(t, ac, "machines"))
	queues("all crawler", obj(t, ac, "queue"))

	// The REST service answers a stats request inline.
	ra := c.postFeed(map[string]any{"stats": "rest", "appid": appID, "uuid": "rest-stats-inline"})
	data, ok := ra["data"].(map[string]any)
	if !ok {
		t.Fatalf("POST /feed stats rest: data is %T: %v", ra["data"], ra)
	}
	if data["stats"] != "rest" || data["uuid"] != "rest-stats-inline" {
		t.Errorf("POST /feed stats rest: %s", brief(data))
	}
	nodes(t, "REST stats rest", data)
}

// TestActionsAndZooKeeper covers the Action API (info in both forms, stop,
// expires) and the Zookeeper API applied by the Redis Monitor to a real
// ZooKeeper and picked up by a running crawler: domain-update throttles a
// domain (at most one fetch while a backlog waits), domain-remove lifts it,
// blacklist-update stops crawling a domain and blacklist-remove resumes it.
func TestActionsAndZooKeeper(t *testing.T) {
	s := testsite.StartAt(t, "127.0.0.3:0")
	d := testsite.StartAt(t, "127.0.0.4:0")
	c := newCluster(t, harness.RedisOptions{}, map[string]string{"KAFKA_APPID_TOPICS": "true"})
	crawled := c.watch("crawled_firehose")
	outbound := c.watch("outbound_firehose")
	outboundApp := c.watch("outbound_" + appID)
	const domS, domD = "127.0.0.3.", "127.0.0.4."
	queueS, queueD := "link:"+domS+":queue", "link:"+domD+":queue"

	zkAction := func(action, domain, uuid string, extra map[string]any) {
		t.Helper()
		req := map[string]any{"uuid": uuid, "appid": appID, "action": action, "domain": domain}
		for k, v := range extra {
			req[k] = v
		}
		c.feed(req)
		m := outbound.await(t, action, 30*time.Second, byUUID(uuid))
		outboundApp.await(t, action, 10*time.Second, byUUID(uuid))
		has(t, action, m, map[string]string{"action": "string", "domain": "string", "server_time": "number", "uuid": "string", "appid": "string"})
		if m["action"] != action || m["domain"] != domain {
			t.Errorf("%s answer: %s", action, brief(m))
		}
	}
	domainCount := func() float64 {
		if m := c.lastDomainConfig(); m != nil {
			if n, ok := m["domains"].(float64); ok {
				return n
			}
		}
		return -1
	}
	blacklisted := func(domain string) bool {
		m := c.lastDomainConfig()
		return m != nil && strings.Contains(fmt.Sprint(m["blacklist"]), domain)
	}

	// domain-update: one hit per minute for site S, applied by the running crawler.
	zkAction("domain-update", domS, "zk-1", map[string]any{"hits": 1, "window": 60, "scale": 1.0})
	waitFor(t, "the crawler to apply the domain-update", 20*time.Second, func() bool { return domainCount() == 1 })

	expires := time.Now().Add(4 * time.Second).Unix()
	c.feed(map[string]any{"url": s.URL("/"), "appid": appID, "crawlid": "slow", "maxdepth": 2})
	c.feed(map[string]any{"url": s.URL("/page/1"), "appid": appID, "crawlid": "stopme", "maxdepth": 2})
	c.feed(map[string]any{"url": s.URL("/page/2"), "appid": appID, "crawlid": "expireme", "maxdepth": 2, "expires": expires})
	waitFor(t, "the three crawls queued", 20*time.Second, func() bool {
		q := c.queued(queueS)
		return len(q) >= 2 && (slices.Contains(q, "slow") || slices.Contains(q, "stopme") || slices.Contains(q, "expireme"))
	})
	// Observe: the throttle allows at most one fetch of S while requests wait.
	observeUntil := time.Now().Add(2 * time.Second)
	for time.Now().Before(observeUntil) {
		if n := len(s.Hits()); n > 1 {
			t.Fatalf("%d fetches of %s under a 1-per-60s domain throttle: %v", n, domS, s.Hits())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(c.queued(queueS)) == 0 {
		t.Fatal("no backlog for the throttled domain")
	}

	// info, crawlid form.
	c.feed(map[string]any{"action": "info", "appid": appID, "crawlid": "slow", "uuid": "info-crawl", "spiderid": "link"})
	ic := outbound.await(t, "info (crawlid)", 30*time.Second, byUUID("info-crawl"))
	outboundApp.await(t, "info (crawlid)", 10*time.Second, byUUID("info-crawl"))
	has(t, "info crawlid", ic, map[string]string{"server_time": "number", "uuid": "string", "crawlid": "string",
		"total_pending": "number", "total_domains": "number", "spiderid": "string", "appid": "string", "domains": "object"})
	if ic["crawlid"] != "slow" || ic["total_pending"].(float64) < 1 {
		t.Errorf("info crawlid: %s", brief(ic))
	}
	if dm, ok := obj(t, ic, "domains")[domS].(map[string]any); !ok {
		t.Errorf("info crawlid: no domain %s: %s", domS, brief(ic))
	} else {
		has(t, "info crawlid domain", dm, map[string]string{"low_priority": "number", "high_priority": "number", "total": "number"})
	}
	// info, appid form.
	c.feed(map[string]any{"action": "info", "appid": appID, "uuid": "info-app", "spiderid": "link"})
	ia := outbound.await(t, "info (appid)", 30*time.Second, byUUID("info-app"))
	has(t, "info appid", ia, map[string]string{"server_time": "number", "uuid": "string", "total_pending": "number",
		"total_domains": "number", "total_crawlids": "number", "spiderid": "string", "appid": "string", "crawlids": "object"})
	if cr, ok := obj(t, ia, "crawlids")["slow"].(map[string]any); !ok {
		t.Errorf("info appid: no crawlid slow: %s", brief(ia))
	} else {
		has(t, "info appid crawlid", cr, map[string]string{"domains": "object", "distinct_domains": "number", "total": "number"})
	}

	// stop.
	c.feed(map[string]any{"action": "stop", "appid": appID, "crawlid": "stopme", "uuid": "stop-1", "spiderid": "link"})
	st := outbound.await(t, "stop", 30*time.Second, byUUID("stop-1"))
	has(t, "stop", st, map[string]string{"total_purged": "number", "server_time": "number", "crawlid": "string",
		"uuid": "string", "spiderid": "string", "appid": "string", "action": "string"})
	if st["action"] != "stop" || st["crawlid"] != "stopme" || st["total_purged"].(float64) < 1 {
		t.Errorf("stop: %s", brief(st))
	}
	if slices.Contains(c.queued(queueS), "stopme") {
		t.Errorf("stopped crawl still queued: %v", c.queued(queueS))
	}

	// expires: the Redis Monitor expires the crawl and purges its queue.
	ex := outbound.await(t, "the expired notification", 30*time.Second, func(m map[string]any) bool {
		return m["action"] == "expired" && m["crawlid"] == "expireme"
	})
	has(t, "expired", ex, map[string]string{"total_expired": "number", "server_time": "number", "crawlid": "string",
		"spiderid": "string", "appid": "string", "action": "string"})
	if ex["total_expired"].(float64) < 1 {
		t.Errorf("expired: %s", brief(ex))
	}
	if slices.Contains(c.queued(queueS), "expireme") {
		t.Errorf("expired crawl still queued: %v", c.queued(queueS))
	}
	if time.Now().Unix() < expires {
		t.Errorf("expired before its time %d", expires)
	}
	if n := len(s.Hits()); n > 1 {
		t.Fatalf("%d fetches of %s under a 1-per-60s domain throttle", n, domS)
	}

	// domain-remove: the running crawler goes back to the default rate and
	// finishes crawl "slow".
	zkAction("domain-remove", domS, "zk-2", nil)
	wantSlow := testsite.Reachable(s.URL("/"), 2, notFile, s)
	expectCrawl(t, crawled, "slow", wantSlow, 60*time.Second)
	if n := len(crawled.all(byCrawl("stopme"))); n > 1 {
		t.Errorf("stopped crawl has %d results after the stop", n)
	}

	// blacklist-update: no fetch of site D while its crawl waits.
	zkAction("blacklist-update", domD, "zk-3", nil)
	waitFor(t, "the crawler to apply the blacklist", 20*time.Second, func() bool { return blacklisted(domD) })
	c.feed(map[string]any{"url": d.URL("/"), "appid": appID, "crawlid": "black", "maxdepth": 1})
	waitFor(t, "the blacklisted crawl queued", 20*time.Second, func() bool { return len(c.queued(queueD)) > 0 })
	observeUntil = time.Now().Add(2 * time.Second)
	for time.Now().Before(observeUntil) {
		if hits := d.Hits(); len(hits) > 0 {
			t.Fatalf("blacklisted domain fetched: %v", hits)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// blacklist-remove: the crawl proceeds.
	zkAction("blacklist-remove", domD, "zk-4", nil)
	expectCrawl(t, crawled, "black", testsite.Reachable(d.URL("/"), 1, notFile, d), 60*time.Second)
	c.drained(30 * time.Second)
}

// TestRedisRestartMidCrawl restarts the append-only redis-server while a
// crawl is under way; every process reconnects and the crawl completes.
func TestRedisRestartMidCrawl(t *testing.T) {
	s := testsite.StartAt(t, "127.0.0.5:0", testsite.WithTree(3, 3))
	// Moderated, 20 pops a second: the crawl takes a couple of seconds.
	c := newCluster(t, harness.RedisOptions{AppendOnly: true}, map[string]string{
		"QUEUE_HITS": "20", "QUEUE_WINDOW": "1", "QUEUE_MODERATED": "true",
	})
	crawled := c.watch("crawled_firehose")
	c.feed(map[string]any{"url": s.URL("/"), "appid": appID, "crawlid": "restart", "maxdepth": 3})
	want := testsite.Reachable(s.URL("/"), 3, notFile, s)
	waitFor(t, "a few pages crawled", 30*time.Second, func() bool { return len(crawled.all(byCrawl("restart"))) >= 5 })
	if got := len(crawled.all(byCrawl("restart"))); got >= len(want) {
		t.Fatalf("crawl finished (%d of %d) before the restart; slow it down", got, len(want))
	}
	if err := c.redis.Restart(); err != nil {
		t.Fatal(err)
	}
	expectCrawl(t, crawled, "restart", want, 90*time.Second)
	c.drained(30 * time.Second)
	got := crawledURLs(crawled, "restart")
	for u := range got {
		if !slices.Contains(want, u) {
			t.Errorf("unexpected page %s", u)
		}
	}
	ctx := context.Background()
	if n, err := c.rdb.Exists(ctx, "link:dupefilter:restart").Result(); err != nil || n != 1 {
		t.Errorf("the duplicate filter of the crawl did not survive the restart: %d %v", n, err)
	}
}
