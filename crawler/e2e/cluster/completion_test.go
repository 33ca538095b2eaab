package cluster_test

// The crawl ledger as the monitors show it (issue 15): crawl-complete on the
// outbound topics, progress in info, stops and expires ending crawls, and
// the REST service's /crawls.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// completeOf accepts the crawl-complete messages of crawlID.
func completeOf(crawlID string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["action"] == "crawl-complete" && m["crawlid"] == crawlID }
}

// progressOf is a message's progress object.
func progressOf(tb testing.TB, m map[string]any) map[string]any {
	tb.Helper()
	return obj(tb, m, "progress")
}

// checkFinal checks a crawl-complete's final counts: every request queued
// (seeds + enqueued) is done, nothing is left, each of pages was published
// once with a 200.
func checkFinal(tb testing.TB, m map[string]any, crawlID, reason string, seeds, pages int) {
	tb.Helper()
	has(tb, "crawl-complete", m, map[string]string{"action": "string", "appid": "string", "crawlid": "string",
		"spiderid": "string", "reason": "string", "progress": "object", "server_time": "number"})
	if m["appid"] != appID || m["crawlid"] != crawlID || m["spiderid"] != "link" || m["reason"] != reason {
		tb.Errorf("crawl-complete %s, want appid %s crawlid %s spiderid link reason %s", brief(m), appID, crawlID, reason)
	}
	p := progressOf(tb, m)
	num := func(k string) int { f, _ := p[k].(float64); return int(f) }
	if p["state"] != "complete" || num("seeds") != seeds || num("queued") != 0 || num("in_flight") != 0 ||
		num("seeds")+num("enqueued") != num("done") {
		tb.Errorf("crawl-complete progress %s, want complete with %d seeds, nothing left and everything done", brief(p), seeds)
	}
	if pages >= 0 && (num("published") != pages || num("fetched") != pages || fmt.Sprint(p["status_codes"]) != fmt.Sprintf("map[200:%d]", pages)) {
		tb.Errorf("crawl-complete progress %s, want %d pages fetched with 200 and published", brief(p), pages)
	}
}

// onlyOnce waits for one more crawl to complete (so that every monitor has
// looked for finished crawls again) and checks that crawlID completed once.
func onlyOnce(tb testing.TB, c *cluster, outbound *topic, site *testsite.Site, crawlID string) {
	tb.Helper()
	marker := crawlID + "-after"
	c.feed(map[string]any{"url": site.URL("/page/3"), "appid": appID, "crawlid": marker, "maxdepth": 0})
	outbound.await(tb, "the crawl-complete of "+marker, 60*time.Second, completeOf(marker))
	if n := len(outbound.all(completeOf(crawlID))); n != 1 {
		tb.Errorf("crawl %s completed %d times, want once", crawlID, n)
	}
}

// TestACrawlCompletesOnceWithItsFinalCounts feeds a crawl with a known page
// set and expects exactly one crawl-complete, with the final counts, within
// 2 s of the last page's result or of the end of its quiet period
// (LEDGER_COMPLETE_QUIET after its last follow-up was queued), whichever
// is later.
func TestACrawlCompletesOnceWithItsFinalCounts(t *testing.T) {
	site := testsite.StartAt(t, "127.0.0.1:0")
	c := newCluster(t, harness.RedisOptions{}, map[string]string{"KAFKA_APPID_TOPICS": "true"})
	crawled := c.watch("crawled_firehose")
	outbound := c.watch("outbound_firehose")
	outboundApp := c.watch("outbound_" + appID)

	c.feed(map[string]any{"url": site.URL("/page/1"), "appid": appID, "crawlid": "known", "maxdepth": 1,
		"allowed_domains": []string{"127.0.0.1"}})
	want := testsite.Reachable(site.URL("/page/1"), 1, notFile, site)
	expectCrawl(t, crawled, "known", want, 60*time.Second)
	lastPage := time.Now()
	done := outbound.await(t, "the crawl-complete of known", ledger.DefaultCompleteQuiet+2*time.Second, completeOf("known"))
	t.Logf("crawl-complete %v after the last page's result", time.Since(lastPage).Round(time.Millisecond))
	exactCrawl(t, crawled, "known", want)
	checkFinal(t, done, "known", "finished", 1, len(want))
	outboundApp.await(t, "the crawl-complete of known on the appid topic", 10*time.Second, completeOf("known"))
	onlyOnce(t, c, outbound, site, "known")

	// info tells the same progress, beside the original's fields.
	c.feed(map[string]any{"action": "info", "appid": appID, "crawlid": "known", "uuid": "info-known", "spiderid": "link"})
	info := outbound.await(t, "the info answer", 30*time.Second, byUUID("info-known"))
	has(t, "info", info, map[string]string{"server_time": "number", "uuid": "string", "total_pending": "number",
		"total_domains": "number", "domains": "object", "appid": "string", "crawlid": "string", "spiderid": "string", "progress": "object"})
	if p := progressOf(t, info); p["state"] != "complete" || p["published"] != progressOf(t, done)["published"] {
		t.Errorf("info progress %s, want the crawl-complete's %s", brief(p), brief(progressOf(t, done)))
	}
}

// startKillable runs a component process a test may SIGKILL (the
// cluster's own processes must not exit before the test ends); it is killed
// when the test ends.
func (c *cluster) startKillable(name, bin string, args ...string) *harness.Process {
	c.tb.Helper()
	return harness.StartProcess(c.tb, harness.ProcessSpec{Name: name, Path: binary(c.tb, bin), Args: args, Env: c.environ()})
}

// TestACrawlCompletesOnceWithTwoMonitorsAfterACrawlerIsKilled runs two
// Redis Monitors and three crawlers; the crawler holding the crawl's pages
// is SIGKILLed mid-fetch. Its leases are reaped and fetched again by the
// others; the crawl completes once, with every page published once.
func TestACrawlCompletesOnceWithTwoMonitorsAfterACrawlerIsKilled(t *testing.T) {
	site := testsite.StartAt(t, "127.0.0.1:0")
	// One page of the domain at a time per crawler, so neither takes them all.
	c := newCluster(t, harness.RedisOptions{}, map[string]string{
		"LEASE_TIMEOUT": "2", "LEASE_REAP_INTERVAL": "0.5", "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
	})
	c.start("redis-monitor-2", "redis-monitor")
	crawled := c.watch("crawled_firehose")
	outbound := c.watch("outbound_firehose")
	// The victim is a crawler of its own (the cluster's must not exit).
	victim := c.startKillable("crawler-victim", "crawler", "--spider", "link")

	const pages = 8
	var want []string
	for i := range pages {
		u := site.URL(fmt.Sprintf("/slow/2000?n=%d", i))
		want = append(want, u)
		c.feed(map[string]any{"url": u, "appid": appID, "crawlid": "killed", "maxdepth": 0})
	}
	ctx := context.Background()
	// Lease ids are "<crawler>:<n>": both crawlers hold a page.
	waitFor(t, "both crawlers holding a page of the crawl", 30*time.Second, func() bool {
		owners := map[string]bool{}
		for _, id := range c.rdb.HKeys(ctx, "leases:link:items").Val() {
			owner, _, _ := strings.Cut(id, ":")
			owners[owner] = true
		}
		return len(owners) >= 2
	})
	victim.Kill()
	c.start("crawler-2", "crawler", "--spider", "link")
	c.start("crawler-3", "crawler", "--spider", "link")

	expectCrawl(t, crawled, "killed", want, 90*time.Second)
	done := outbound.await(t, "the crawl-complete of killed", 30*time.Second, completeOf("killed"))
	checkFinal(t, done, "killed", "finished", pages, -1)
	if p := progressOf(t, done); p["published"].(float64) < pages {
		t.Errorf("progress %s, want at least %d published", brief(p), pages)
	}
	onlyOnce(t, c, outbound, site, "killed")
}

// restGet asks the REST service and returns the answer's data.
func (c *cluster) restGet(tb testing.TB, path string) map[string]any {
	tb.Helper()
	resp, err := http.Get(c.restURL(path))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var ans map[string]any
	if err := json.Unmarshal(raw, &ans); err != nil || resp.StatusCode != http.StatusOK || ans["status"] != "SUCCESS" {
		tb.Fatalf("GET %s: status %d: %.1000s", path, resp.StatusCode, raw)
	}
	return obj(tb, ans, "data")
}

// indexOf is the position of the first message keep accepts (-1 if none).
func indexOf(t *topic, keep func(map[string]any) bool) int {
	for i, m := range t.all(func(map[string]any) bool { return true }) {
		if keep(m) {
			return i
		}
	}
	return -1
}

// checkEndedAfter awaits the crawl-complete of crawlID, a crawl of 5 seeds
// with 1 page crawled that a stop or an expire (endedBy) ended with reason
// after purging the other 4, and checks that it came after the action's
// answer (answerName, the message answer accepts).
func checkEndedAfter(t *testing.T, outbound *topic, crawlID, reason, endedBy, answerName string, answer func(map[string]any) bool) {
	t.Helper()
	m := outbound.await(t, "the crawl-complete of "+crawlID, 10*time.Second, completeOf(crawlID))
	checkFinal(t, m, crawlID, reason, 5, 1)
	if p := progressOf(t, m); fmt.Sprint(p["purged"]) != "map["+endedBy+":4]" || p["ended_by"] != endedBy {
		t.Errorf("%s progress %s, want 4 purged by the %s", reason, brief(p), endedBy)
	}
	if i, j := indexOf(outbound, answer), indexOf(outbound, completeOf(crawlID)); i > j {
		t.Errorf("crawl-complete (message %d) before %s (message %d)", j, answerName, i)
	}
}

// TestStopAndExpireEndCrawlsAfterTheirAnswers stops one crawl and lets
// another expire while their domains are throttled (pages stay queued):
// each gets its usual answer, then a crawl-complete saying "stopped" or
// "expired" with the purge counted; /crawls and /crawls/<id> show both.
func TestStopAndExpireEndCrawlsAfterTheirAnswers(t *testing.T) {
	a := testsite.StartAt(t, "127.0.0.1:0")
	b := testsite.StartAt(t, "127.0.0.2:0")
	// One page per domain per minute: the rest stays queued. The seeds go
	// as separate messages: a quiet period longer than the feeding keeps
	// each crawl from completing after its first page; the stop and the
	// expiry end them at once all the same. expireme's seeds must all be
	// queued before its deadline, so they go first and through REST (the
	// stop's, each by a process of its own, take seconds on a loaded
	// machine: fed before them, the last of expireme's came after its
	// deadline and was never queued).
	c := newCluster(t, harness.RedisOptions{}, map[string]string{"QUEUE_HITS": "1", "QUEUE_WINDOW": "60",
		"LEDGER_COMPLETE_QUIET": "300"})
	outbound := c.watch("outbound_firehose")
	crawled := c.watch("crawled_firehose")

	expires := time.Now().Add(12 * time.Second).Unix()
	for i := range 5 {
		c.postFeed(map[string]any{"url": b.URL(fmt.Sprintf("/page/%d", i+1)), "appid": appID, "crawlid": "expireme", "maxdepth": 0, "expires": expires})
	}
	for i := range 5 {
		c.feed(map[string]any{"url": a.URL(fmt.Sprintf("/page/%d", i+1)), "appid": appID, "crawlid": "stopme", "maxdepth": 0})
	}
	waitFor(t, "a page of each crawl", 30*time.Second, func() bool {
		return len(crawled.all(byCrawl("stopme"))) == 1 && len(crawled.all(byCrawl("expireme"))) == 1
	})

	c.feed(map[string]any{"action": "stop", "appid": appID, "crawlid": "stopme", "uuid": "stop-ledger", "spiderid": "link"})
	st := outbound.await(t, "the stop answer", 30*time.Second, byUUID("stop-ledger"))
	if st["total_purged"] != 4.0 {
		t.Errorf("stop answer %s, want 4 purged", brief(st))
	}
	checkEndedAfter(t, outbound, "stopme", "stopped", "stop", "the stop answer", byUUID("stop-ledger"))

	expiredNote := func(m map[string]any) bool { return m["action"] == "expired" && m["crawlid"] == "expireme" }
	ex := outbound.await(t, "the expired notification", 30*time.Second, expiredNote)
	if ex["total_expired"] != 4.0 {
		t.Errorf("expired notification %s, want 4 expired", brief(ex))
	}
	checkEndedAfter(t, outbound, "expireme", "expired", "expire", "the expired notification", expiredNote)

	// The REST service lists both, newest first, and shows each. A monitor
	// records a crawl complete once Kafka has its crawl-complete, so the
	// ledger may say so a moment after the message arrives.
	var list map[string]any
	states := map[string]string{}
	listed := func() bool {
		list = c.restGet(t, "/crawls?appid="+appID)
		crawls, _ := list["crawls"].([]any)
		clear(states)
		for _, e := range crawls {
			m := e.(map[string]any)
			states[fmt.Sprint(m["crawlid"])] = fmt.Sprint(obj(t, m, "progress")["state"], "/", obj(t, m, "progress")["ended_by"])
		}
		return states["stopme"] == "complete/stop" && states["expireme"] == "complete/expire" && list["total"] == 2.0
	}
	deadline := time.Now().Add(10 * time.Second)
	for !listed() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !listed() {
		t.Errorf("/crawls: %s", brief(list))
	}
	one := c.restGet(t, "/crawls/"+url.PathEscape("stopme")+"?appid="+appID)
	if p := obj(t, one, "progress"); p["ended_by"] != "stop" || one["total_pending"] != 0.0 || len(obj(t, one, "domains")) != 0 {
		t.Errorf("/crawls/stopme: %s", brief(one))
	}
}

// TestSeedsFedAsSeparateMessagesMakeOneCrawl feeds a crawl one seed per
// message; the first is crawled (and nothing is left of the crawl) before
// the others are fed. Within LEDGER_COMPLETE_QUIET of its last seed the
// crawl does not complete: one crawl-complete counts every seed.
func TestSeedsFedAsSeparateMessagesMakeOneCrawl(t *testing.T) {
	site := testsite.StartAt(t, "127.0.0.1:0")
	c := newCluster(t, harness.RedisOptions{}, map[string]string{"LEDGER_COMPLETE_QUIET": "20"})
	crawled := c.watch("crawled_firehose")
	outbound := c.watch("outbound_firehose")
	seed := func(i int) {
		c.postFeed(map[string]any{"url": site.URL(fmt.Sprintf("/page/%d", i)), "appid": appID, "crawlid": "trickle", "maxdepth": 0})
	}
	seed(1)
	waitFor(t, "the first seed's page", 30*time.Second, func() bool { return len(crawled.all(byCrawl("trickle"))) == 1 })
	waitFor(t, "nothing left of the crawl", 30*time.Second, func() bool {
		h := c.rdb.HGetAll(context.Background(), ledger.Crawl{SpiderID: "link", AppID: appID, CrawlID: "trickle"}.Key()).Val()
		return h["done"] == "1"
	})
	seed(2)
	seed(3)
	done := outbound.await(t, "the crawl-complete of trickle", 60*time.Second, completeOf("trickle"))
	checkFinal(t, done, "trickle", "finished", 3, 3)
	if n := len(crawled.all(byCrawl("trickle"))); n != 3 {
		t.Errorf("%d pages of trickle, want 3", n)
	}
}
