package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

func TestCrawlFollowsLinksToMaxDepthOncePerPage(t *testing.T) {
	e := newEnv(t, nil)
	seed := crawl(e.site.URL("/"), "depth2", 2)
	want := testsite.Reachable(seed.URL, 2, notFile, e.site)
	e.crawlsExactly(t, seed, want)
}

func TestAllowAndDenyRegexChooseTheLinks(t *testing.T) {
	e := newEnv(t, nil)
	seed := crawl(e.site.URL("/"), "regex", 2)
	seed.AllowRegex = []string{"/page/", "/allow/"}
	seed.DenyRegex = []string{"/page/2", "/allow/2"}
	allow := regexp.MustCompile(`/page/|/allow/`)
	deny := regexp.MustCompile(`/page/2|/allow/2`)
	want := testsite.Reachable(seed.URL, 2, func(link string) bool {
		return notFile(link) && allow.MatchString(link) && !deny.MatchString(link)
	}, e.site)
	e.crawlsExactly(t, seed, want)
}

func TestAllowedDomainsKeepsTheCrawlOnItsSite(t *testing.T) {
	other := testsite.StartAt(t, "127.0.0.2:0")
	e := newEnv(t, nil)
	e.site.SetPeers(other.URL("/"))
	seed := crawl(e.site.URL("/"), "domains", 1)
	seed.AllowedDomains = []string{"127.0.0.1"}
	want := testsite.Reachable(seed.URL, 1, func(link string) bool {
		return notFile(link) && strings.Contains(link, "//127.0.0.1:")
	}, e.site, other)
	e.crawlsExactly(t, seed, want)
	if len(other.Hits()) != 0 {
		t.Fatalf("fetched the other site: %v", other.Hits())
	}
}

func TestResultHasEveryFieldOfTheSpecsCrawlResult(t *testing.T) {
	e := newEnv(t, nil)
	seed := crawl(e.site.URL("/page/1"), "fields", 1)
	seed.Attrs = json.RawMessage(`{"customer":"abc","n":[1,2]}`)
	seed.UserAgent = "MyCrawler/1.0"
	e.seed(t, seed)
	var page map[string]any
	harness.WaitFor(t, "the seed's result", 30*time.Second, func() bool {
		for _, p := range e.pages(t, len(e.read)+1, 30*time.Second) {
			if p["url"] == seed.URL {
				page = p
				return true
			}
		}
		return false
	})
	for _, key := range []string{"url", "response_url", "status_code", "status_msg", "response_headers", "request_headers",
		"body", "links", "attrs", "appid", "crawlid", "timestamp", "encoding"} {
		if _, ok := page[key]; !ok {
			t.Errorf("result lacks %q: %v", key, page)
		}
	}
	if page["response_url"] != seed.URL || page["status_code"] != 200.0 || page["status_msg"] != "OK" ||
		page["appid"] != "testapp" || page["crawlid"] != "fields" || page["encoding"] != "utf-8" {
		t.Errorf("result %v", page)
	}
	if attrs, _ := json.Marshal(page["attrs"]); string(attrs) != `{"customer":"abc","n":[1,2]}` {
		t.Errorf("attrs %s", attrs)
	}
	if ua := jsonText(page["request_headers"].(map[string]any)["User-Agent"]); ua != `["MyCrawler/1.0"]` {
		t.Errorf("request_headers User-Agent %v", ua)
	}
	if ct := page["response_headers"].(map[string]any)["Content-Type"]; !strings.Contains(jsonText(ct), "text/html") {
		t.Errorf("response_headers Content-Type %v", ct)
	}
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?$`).MatchString(page["timestamp"].(string)) {
		t.Errorf("timestamp %v", page["timestamp"])
	}
	if !strings.Contains(page["body"].(string), "<html") {
		t.Errorf("body %.200v", page["body"])
	}
	links := page["links"].([]any)
	if len(links) == 0 {
		t.Fatalf("no links in %v", page)
	}
	first := links[0].(map[string]any)
	if _, ok := first["url"]; !ok || first["text"] == nil {
		t.Errorf("link %v", first)
	}
}

func jsonText(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestErrorPagesArePublishedAndFailuresRetriedThenDropped(t *testing.T) {
	e := newEnv(t, map[string]string{"DOWNLOAD_TIMEOUT": "0.3", "RETRY_TIMES": "2"})
	e.seed(t, crawl(e.site.URL("/status/404"), "errors", 0))
	e.seed(t, crawl(e.site.URL("/status/500"), "errors", 0))
	e.seed(t, crawl(e.site.URL("/hang"), "errors", 0))
	e.seed(t, crawl(e.site.URL("/status/504"), "errors", 0))
	got := e.pages(t, 2, 30*time.Second)
	e.drained(t, "link")
	e.noMorePages(t)
	codes := map[float64]bool{}
	for _, p := range got {
		codes[p["status_code"].(float64)] = true
	}
	if !codes[404] || !codes[500] {
		t.Fatalf("published codes %v, want 404 and 500", codes)
	}
	// Each failing request: the first attempt and RETRY_TIMES retries.
	if n := len(e.site.HitsFor("/hang")); n != 3 {
		t.Errorf("/hang fetched %d times, want 3", n)
	}
	if n := len(e.site.HitsFor("/status/504")); n != 3 {
		t.Errorf("/status/504 fetched %d times, want 3", n)
	}
	if !e.log.Contains("Gave up retrying the request; dropped") {
		t.Error("no log line for the dropped requests")
	}
	if n := e.eng.Counters().Dropped.Load(); n != 2 {
		t.Errorf("dropped %d, want 2", n)
	}
	// One 404; three 504 responses and three attempts that got no response
	// at all, which count as 504s. Counts are written a few times a second.
	count := func(code string) int64 {
		return e.rdb.PFCount(context.Background(), rediskeys.CrawlerStatusKey(hostname(t), "link", code)+":lifetime").Val()
	}
	harness.WaitFor(t, "the response code counts", 10*time.Second, func() bool { return count("404") == 1 && harness.DistinctCountMatches(count("504"), 6) })
	if !e.log.Contains(`"Scraper Retry"`) {
		t.Error("no Scraper Retry log line")
	}
}

func TestExpiredAndStoppedCrawlsGoNoFurther(t *testing.T) {
	e := newEnv(t, nil)
	expired := crawl(e.site.URL("/page/1"), "expired", 2)
	expired.Expires = float64(time.Now().Add(-time.Minute).Unix())
	e.seed(t, expired)
	// A stopped crawl: its seed is crawled (it was popped), its links are not queued.
	e.rdb.SAdd(context.Background(), "link:blacklist", "testapp||stopped")
	e.seed(t, crawl(e.site.URL("/page/2"), "stopped", 2))
	got := e.pages(t, 1, 30*time.Second)
	e.drained(t, "link")
	e.noMorePages(t)
	if got[0]["url"] != e.site.URL("/page/2") {
		t.Fatalf("results %v", urls(got))
	}
	if len(e.site.HitsFor("/page/1")) != 0 {
		t.Fatal("fetched a request of an expired crawl")
	}
}

func TestLiveDomainConfigChangesTheThrottleAndBlacklist(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	store := domainconfig.NewRedisStore(e.rdb, "/scrapy-cluster/crawler/all")
	domain := "127.0.0.1."
	if err := store.Update(ctx, func(d *domainconfig.Document) error { d.UpdateDomain(domain, 2, 60, 1.0); return nil }); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "the throttle change", 10*time.Second, func() bool {
		e.seed(t, crawl(e.site.URL("/page/3"), "probe", 0)) // makes the domain known
		hits, window, _ := e.eng.Scheduler().Throttle(domain)
		return hits == 2 && window == time.Minute
	})
	if err := store.Update(ctx, func(d *domainconfig.Document) error { d.AddBlacklist(domain); return nil }); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "the blacklist", 10*time.Second, func() bool {
		_, _, blocked := e.eng.Scheduler().Throttle(domain)
		return blocked
	})
	if err := store.Update(ctx, func(d *domainconfig.Document) error { d.RemoveBlacklist(domain); d.RemoveDomain(domain); return nil }); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "the default throttle back", 10*time.Second, func() bool {
		hits, _, blocked := e.eng.Scheduler().Throttle(domain)
		return hits == 100000 && !blocked
	})
}

func TestShutdownReturnsUnfinishedRequestsToTheirQueue(t *testing.T) {
	e := newEnv(t, map[string]string{"SHUTDOWN_GRACE": "0.2", "DOWNLOAD_TIMEOUT": "30"})
	e.seed(t, crawl(e.site.URL("/slow/20000"), "slow", 0))
	harness.WaitFor(t, "the slow page in flight", 10*time.Second, func() bool { return len(e.site.HitsFor("/slow/20000")) == 1 })
	e.stopEngine(t)
	e.returned(t, 1)
}

// returned checks, after the engine stopped, that its n unfinished
// requests are back in the test site's queue and no lease is left.
func (e *env) returned(t *testing.T, n int64) {
	t.Helper()
	ctx := context.Background()
	if got := e.rdb.ZCard(ctx, "link:127.0.0.1.:queue").Val(); got != n {
		t.Fatalf("queue holds %d after shutdown, want the %d unfinished requests back", got, n)
	}
	if got := e.rdb.ZCard(ctx, rediskeys.LeaseKey("link")).Val(); got != 0 {
		t.Fatalf("%d leases left", got)
	}
}

// TestPagesWaitingForKafkaLeaveTheirSlotsToTheNextPages: a page whose
// result is encoded and with the producer gives its processing slot to the
// next fetched page while it waits for Kafka (away here), so the crawler
// keeps fetching: with CONCURRENT_REQUESTS 2, six pages or more at once
// (two fetched, two processed, the others waiting for Kafka with a token
// each, no worker), where processing slots held until Kafka's
// acknowledgement stopped it at four.
// Nothing is acknowledged before Kafka has it: every page is published
// once Kafka is back.
func TestPagesWaitingForKafkaLeaveTheirSlotsToTheNextPages(t *testing.T) {
	e := newEnv(t, map[string]string{"CONCURRENT_REQUESTS": "2", "CONCURRENT_REQUESTS_PER_DOMAIN": "2"})
	addr := e.kafka.Cluster.ListenAddrs()[0]
	port, err := strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
	if err != nil {
		t.Fatal(err)
	}
	e.kafka.Close()
	var want []string
	for i := range 8 {
		u := e.site.URL(fmt.Sprintf("/slow/%d", i+1))
		want = append(want, u)
		e.seed(t, crawl(u, "kafka-away", 0))
	}
	fetched := func() (n int) {
		for i := range 8 {
			if len(e.site.HitsFor(fmt.Sprintf("/slow/%d", i+1))) > 0 {
				n++
			}
		}
		return n
	}
	harness.WaitFor(t, "six pages fetched while Kafka is away", 30*time.Second, func() bool { return fetched() >= 6 })
	ctx := context.Background()
	if n := e.rdb.HLen(ctx, rediskeys.LeaseKey("link")+":items").Val(); n < 6 {
		t.Fatalf("%d requests leased while their pages wait for Kafka, want them all (6 or more)", n)
	}
	e.kafka = harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true, Ports: []int{port}})
	got := urls(e.pages(t, 8, 60*time.Second))
	e.drained(t, "link")
	e.noMorePages(t)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("published %v, want %v", got, want)
	}
}

// TestStoppingWhileKafkaIsAwayReturnsThePagesWaitingForIt: pages whose
// results wait for Kafka (away) hold no worker, but the crawler still
// waits for them when it stops: their publishing ends with the grace
// period, nothing is acknowledged, and their requests go back to their
// queue with no lease left.
func TestStoppingWhileKafkaIsAwayReturnsThePagesWaitingForIt(t *testing.T) {
	e := newEnv(t, map[string]string{"SHUTDOWN_GRACE": "0.2", "CONCURRENT_REQUESTS": "2", "CONCURRENT_REQUESTS_PER_DOMAIN": "2"})
	e.kafka.Close()
	for i := range 4 {
		e.seed(t, crawl(e.site.URL(fmt.Sprintf("/slow/%d", i+1)), "kafka-away-stop", 0))
	}
	harness.WaitFor(t, "four pages fetched while Kafka is away", 30*time.Second, func() bool {
		for i := range 4 {
			if len(e.site.HitsFor(fmt.Sprintf("/slow/%d", i+1))) == 0 {
				return false
			}
		}
		return true
	})
	harness.WaitFor(t, "a publish attempt failed", 30*time.Second, func() bool {
		return strings.Contains(e.log.String(), "Failed to send to Kafka; retrying")
	})
	e.stopEngine(t)
	e.returned(t, 4)
	if n := e.eng.Counters().Published.Load(); n != 0 {
		t.Fatalf("%d pages counted published with Kafka away", n)
	}
}
