package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// invariantScript reads a crawl's ledger's left and the crawl's queued and
// leased requests in one atomic step (testdata/invariant.lua).
var invariantScript = testScript("invariant")

// testScript is the script testdata/<name>.lua with the library functions
// it includes (redisscripts.Compose).
func testScript(name string) *redisscripts.Script {
	src, err := os.ReadFile("testdata/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	s, err := redisscripts.Compose(name, string(src))
	if err != nil {
		panic(err)
	}
	return s
}

// sampler checks seeds + enqueued = done + queued + leased for a crawl, over
// and over while a crawl runs, each time in one atomic read.
type sampler struct {
	samples, broken atomic.Int64
	first           atomic.Value // string: the first broken sample
	stop            chan struct{}
	done            sync.WaitGroup
}

func (c *cluster) sample(tb testing.TB, spiderID, crawlID string) *sampler {
	s := &sampler{stop: make(chan struct{})}
	cr := ledger.Crawl{SpiderID: spiderID, AppID: "e2e", CrawlID: crawlID}
	s.done.Go(func() {
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			v, err := invariantScript.Run(context.Background(), c.rdb, []string{cr.Key(), "leases:" + spiderID + ":items"},
				spiderID+":*:queue", cr.AppID, cr.CrawlID).Int64Slice()
			if err != nil {
				continue
			}
			s.samples.Add(1)
			if v[0] != v[1]+v[2] {
				s.broken.Add(1)
				s.first.CompareAndSwap(nil, fmt.Sprintf("left %d, queued %d, leased %d", v[0], v[1], v[2]))
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	tb.Cleanup(s.finish)
	return s
}

func (s *sampler) finish() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.done.Wait()
}

// check stops the sampler and fails when a sample broke the invariant.
func (s *sampler) check(tb testing.TB, atLeast int64) {
	tb.Helper()
	s.finish()
	if s.broken.Load() > 0 {
		tb.Errorf("%d of %d samples broke seeds + enqueued = done + queued + leased; first: %v", s.broken.Load(), s.samples.Load(), s.first.Load())
	}
	if s.samples.Load() < atLeast {
		tb.Errorf("only %d samples taken, want at least %d", s.samples.Load(), atLeast)
	}
	tb.Logf("%d samples of the ledger invariant, none broken", s.samples.Load())
}

// progress reads a crawl's ledger.
func (c *cluster) progress(tb testing.TB, spiderID, crawlID string) *ledger.Progress {
	tb.Helper()
	p, err := ledger.Read(context.Background(), c.rdb, ledger.Crawl{SpiderID: spiderID, AppID: "e2e", CrawlID: crawlID})
	if err != nil || p[0] == nil {
		tb.Fatalf("read the ledger of %s: %v %v", crawlID, p, err)
	}
	return p[0]
}

// fields are a progress's counts by name, for comparison.
func fields(p *ledger.Progress) map[string]int64 {
	out := map[string]int64{
		"seeds": p.Seeds, "enqueued": p.Enqueued, "done": p.Done, "queued": p.Queued, "in_flight": p.InFlight,
		"published": p.Published, "published_truncated": p.PublishedTruncated, "retried": p.Retried,
	}
	for k, v := range p.StatusCodes {
		out["fetched:"+k] = v
	}
	for k, v := range p.Refused {
		out["refused:"+k] = v
	}
	for k, v := range p.Dropped {
		out["dropped:"+k] = v
	}
	for k, v := range p.Purged {
		out["purged:"+k] = v
	}
	return out
}

// ledgerSite serves a small site whose every page's fate is known:
//
//	/          links /a, /b, /a again, /deny/1, an off-domain page, /file.pdf,
//	           /missing (404), /hang (never answers), /private/1 (robots.txt
//	           disallows it) and /gateway (always 504)
//	/a         links /, /b and /c          /b   links /a and /c
//	/c         links /d (beyond maxdepth 2)
func ledgerSite(tb testing.TB, done <-chan struct{}) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	page := func(links ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			var b strings.Builder
			b.WriteString("<html><body>")
			for _, l := range links {
				fmt.Fprintf(&b, `<a href="%s">%s</a> `, l, l)
			}
			b.WriteString("</body></html>")
			_, _ = w.Write([]byte(b.String()))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", page("/a", "/b", "/a", "/deny/1", "http://127.0.0.2:1/elsewhere", "/file.pdf",
		"/missing", "/hang", "/private/1", "/gateway"))
	mux.HandleFunc("/a", page("/", "/b", "/c"))
	mux.HandleFunc("/b", page("/a", "/c"))
	mux.HandleFunc("/c", page("/d"))
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("User-agent: *\nDisallow: /private/\n"))
	})
	mux.HandleFunc("/gateway", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGatewayTimeout) })
	mux.HandleFunc("/hang", func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	})
	mux.HandleFunc("/", http.NotFound)
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// In both duplicate filter modes (DUPEFILTER_MODE): the compact filter of
// this small crawl drops no new page, so the counts are the same.
func TestTheLedgerCountsEveryRequestOfACrawlExactlyAndNeverBreaksItsSum(t *testing.T) {
	for _, mode := range []string{"exact", "bloom"} {
		t.Run(mode, func(t *testing.T) { testTheLedgerCountsEveryRequest(t, mode) })
	}
}

func testTheLedgerCountsEveryRequest(t *testing.T, mode string) {
	c := newCluster(t)
	testOver := make(chan struct{})
	base := ledgerSite(t, testOver)
	t.Cleanup(func() { close(testOver) })
	c.startCrawler(t, "crawler", map[string]string{
		"ROBOTSTXT_OBEY": "true", "RETRY_TIMES": "1", "DOWNLOAD_TIMEOUT": "1", "DUPEFILTER_MODE": mode,
	})
	s := c.sample(t, "link", "ledger")
	seed := crawl("link", base+"/", "ledger", 2)
	seed.AllowedDomains = []string{"127.0.0.1"}
	seed.DenyRegex = []string{"/deny/"}
	c.seed(t, seed)
	// Done: the seed and the 7 pages it led to.
	harness.WaitFor(t, "the crawl to finish", 60*time.Second, func() bool {
		p := c.progress(t, "link", "ledger")
		return p.Done == 8 && p.Outstanding() == 0
	})
	c.drained(t, 10*time.Second, "link")
	s.check(t, 20)
	want := map[string]int64{
		"seeds": 1, "enqueued": 7, "done": 8, "queued": 0, "in_flight": 0,
		// /, /a, /b, /c and the 404 page
		"published": 5, "published_truncated": 0, "fetched:200": 4, "fetched:404": 1,
		// /gateway: a 504, retried once, a 504 again; /hang: a timeout, retried once, again
		"fetched:504": 2, "retried": 2, "dropped:504": 1, "dropped:timeout": 1,
		"refused:robots": 1, "refused:off_domain": 1, "refused:regex": 1, "refused:extension": 1,
		// /a links / and /b, both known by then, and /c; /b links /a and /c,
		// one of which /a queued first
		"refused:duplicate": 4,
	}
	p := c.progress(t, "link", "ledger")
	if got := fields(p); !maps.Equal(got, want) {
		t.Fatalf("ledger\n got %v\nwant %v", got, want)
	}
	bits, _ := rediskeys.BloomFilterKeys("link", "ledger")
	exact := c.rdb.Exists(context.Background(), rediskeys.DupeFilterKey("link", "ledger")).Val()
	compact := c.rdb.Exists(context.Background(), bits).Val()
	if (mode == "exact") != (exact == 1 && compact == 0) || (mode == "bloom") != (exact == 0 && compact == 1) {
		t.Errorf("mode %s: the set of fingerprints exists %d, the compact filter %d", mode, exact, compact)
	}
	if est := p.DupeFilterFalseDropsEstimate; (mode == "exact" && est != 0) || (mode == "bloom" && (est < 0 || est > 1e-3)) {
		t.Errorf("mode %s: false drops estimated %v", mode, est)
	}
}

// expectedRefusals computes what a crawl of sites from seed to maxDepth
// refuses, following what follow allows and counting what it does not
// (refused by extension, as notFile does): the links of every page above
// maxDepth, each once per page; those followed but already queued are
// duplicates.
func expectedRefusals(seed string, maxDepth int, follow func(string) bool, sites ...*testsite.Site) (duplicate, extension int64) {
	reach := testsite.Reachable(seed, maxDepth, follow, sites...)
	followed := int64(0)
	for _, r := range refusalsByPage(seed, maxDepth, follow, sites...) {
		followed += r.followed
		extension += r.extension
	}
	return followed - int64(len(reach)-1), extension
}

// pageLinks is what one crawl of a page offers the queue: the distinct links
// it follows and the ones it refuses for their extension.
type pageLinks struct{ followed, extension int64 }

// refusalsByPage gives pageLinks for each page of the crawl from seed whose
// links are followed (those above maxDepth).
func refusalsByPage(seed string, maxDepth int, follow func(string) bool, sites ...*testsite.Site) map[string]pageLinks {
	out := map[string]pageLinks{}
	depth := map[string]int{seed: 0}
	queue := []string{seed}
	for i := 0; i < len(queue); i++ {
		u := queue[i]
		if depth[u] >= maxDepth {
			continue
		}
		pu, _ := url.Parse(u)
		var site *testsite.Site
		for _, s := range sites {
			if s.Addr() == pu.Host {
				site = s
			}
		}
		if site == nil {
			continue
		}
		var links pageLinks
		seen := map[string]bool{}
		for _, l := range site.Links(pu.Path) {
			l, _, _ = strings.Cut(l, "#")
			if seen[l] {
				continue
			}
			seen[l] = true
			if !follow(l) {
				links.extension++
				continue
			}
			links.followed++
			if _, ok := depth[l]; !ok {
				depth[l] = depth[u] + 1
				queue = append(queue, l)
			}
		}
		out[u] = links
	}
	return out
}

func TestAKilledCrawlersRequestsAreCountedOnceAfterTheirLeasesAreReaped(t *testing.T) {
	c := newCluster(t)
	// The victim's tree page fetches never get an answer: it dies holding
	// one or more. The others get theirs after 20 ms.
	st := startVictimSite(t, 20*time.Millisecond, testsite.WithPages(4))
	lease := map[string]string{"LEASE_TIMEOUT": "2", "LEASE_REAP_INTERVAL": "1", "SC_LOG_LEVEL": "INFO"}
	// It waits for its tree pages until killed: no timeout, no retry.
	// Alone at first, so that it surely takes some.
	victim := c.startCrawler(t, "victim", with(lease, "USER_AGENT", victimUA, "DOWNLOAD_TIMEOUT", "600"))
	s := c.sample(t, "link", "killed-ledger")
	seed := crawl("link", st.URL("/"), "killed-ledger", 3)
	want := testsite.Reachable(seed.URL, 3, notFile, st)
	c.seed(t, seed)
	harness.WaitFor(t, "the victim to hold a tree page", 30*time.Second, func() bool { return len(victimTreeHits(st)) >= 1 })
	c.startSurvivors(t, 2, lease)
	victim.kill()
	harness.WaitFor(t, "the crawl to finish", 90*time.Second, func() bool {
		p := c.progress(t, "link", "killed-ledger")
		return p.Done == int64(len(want)) && p.Outstanding() == 0 && p.InFlight == 0
	})
	c.drained(t, 10*time.Second, "link")
	s.check(t, 20)
	// A page the victim fetched and never acknowledged queued nothing: its
	// links are queued, and refused, once, by the survivor that crawls it
	// again. Every count is exact.
	dup, ext := expectedRefusals(seed.URL, 3, notFile, st)
	n := int64(len(want))
	wantFields := map[string]int64{
		"seeds": 1, "enqueued": n - 1, "done": n, "queued": 0, "in_flight": 0,
		"published": n, "published_truncated": 0, "retried": 0, "fetched:200": n,
		"refused:duplicate": dup, "refused:extension": ext,
	}
	got := fields(c.progress(t, "link", "killed-ledger"))
	if !maps.Equal(got, wantFields) {
		t.Fatalf("ledger\n got %v\nwant %v", got, wantFields)
	}
}

// countPublished reads crawl results until every url in want has one of
// crawlID and returns how many each url got. It counts as it reads (a large
// crawl's results are not kept).
func (c *cluster) countPublished(tb testing.TB, crawlID string, want []string, timeout time.Duration) map[string]int {
	tb.Helper()
	missing := make(map[string]bool, len(want))
	for _, u := range want {
		missing[u] = true
	}
	counts := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for read := 0; len(missing) > 0; read++ {
		msg, err := c.firehose(tb).ReadMessage(ctx)
		if err != nil {
			tb.Fatalf("waiting for %d pages of crawl %s: %d missing after %d results: %v", len(want), crawlID, len(missing), read, err)
		}
		if u, ok := resultOf(tb, crawlID, msg.Value); ok {
			counts[u]++
			delete(missing, u)
		}
	}
	return counts
}

// resultOf returns the url of a crawl result of crawlID.
func resultOf(tb testing.TB, crawlID string, value []byte) (url string, ok bool) {
	tb.Helper()
	var page struct {
		URL     string `json:"url"`
		CrawlID string `json:"crawlid"`
	}
	if err := json.Unmarshal(value, &page); err != nil {
		tb.Fatalf("result is not a crawl result: %v: %.300s", err, value)
	}
	return page.URL, page.CrawlID == crawlID
}

// checkPublishedOnce adds to counts the results of crawlID that still come
// within a second (late copies count too), then fails for every page
// published more than once and every crawler that logged a lease expiry or
// a failed renewal.
func (c *cluster) checkPublishedOnce(tb testing.TB, crawlID string, counts map[string]int, crawlers []*crawler) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	for {
		msg, err := c.firehose(tb).ReadMessage(ctx)
		if err != nil {
			break
		}
		if u, ok := resultOf(tb, crawlID, msg.Value); ok {
			counts[u]++
		}
	}
	cancel()
	var dups []string
	for u, n := range counts {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%s (%d)", u, n))
		}
	}
	slices.Sort(dups)
	if len(dups) > 0 {
		// Say which mechanism sent them twice: a lease lost, or a produce
		// retried after Kafka had taken it (neither: a produce attempt
		// the producer itself repeated, which it does not log).
		for _, p := range crawlers {
			tb.Logf("crawler %s: lease lost %v, Kafka send retried %v", p.name,
				p.out.Contains("Leases expired before"), p.out.Contains("Failed to send to Kafka; retrying"))
		}
		tb.Errorf("%d of %d pages published more than once, the first ones: %v", len(dups), len(counts), dups[:min(len(dups), 20)])
	}
	for _, p := range crawlers {
		for _, warning := range []string{"expired", "Failed to renew leases"} {
			if p.out.Contains(warning) {
				tb.Errorf("crawler %s logged %q", p.name, warning)
			}
		}
	}
}

// busyScript holds Redis for ARGV[1] microseconds by Redis's own clock
// (testdata/busy.lua).
var busyScript = testScript("busy")

// keepBusy has clients connections run busyScript back to back, each run
// holding Redis for hold, until stop is called (or the test ends). Stop
// returns how long after it was sent Redis ran a plain command, at most
// and at the median, measured every 20 ms meanwhile.
func (c *cluster) keepBusy(tb testing.TB, clients int, hold time.Duration) (stop func() (slowest, median time.Duration)) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				busyScript.Run(ctx, c.rdb, nil, hold.Microseconds())
			}
		})
	}
	probe := c.redis.TestClient(tb)
	var delays []time.Duration
	wg.Go(func() {
		for ctx.Err() == nil {
			sent := time.Now()
			if ran, err := probe.Time(ctx).Result(); err == nil {
				delays = append(delays, ran.Sub(sent))
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	var once sync.Once
	stop = func() (slowest, median time.Duration) {
		once.Do(func() { cancel(); wg.Wait() })
		if len(delays) == 0 {
			return 0, 0
		}
		slices.Sort(delays)
		return delays[len(delays)-1], delays[len(delays)/2]
	}
	tb.Cleanup(func() { stop() })
	return stop
}

func TestALoadedCrawlPublishesEachPageOnceAndNoLeaseExpires(t *testing.T) {
	c := newCluster(t)
	site := testsite.Start(t, testsite.WithPages(20), testsite.WithTree(6, 3))
	// A short lease and a Redis kept busy: every renewal and acknowledgement
	// waits behind other clients' commands.
	lease := map[string]string{"LEASE_TIMEOUT": "2", "LEASE_REAP_INTERVAL": "0.5", "SC_LOG_LEVEL": "INFO",
		"CONCURRENT_REQUESTS": "64", "CONCURRENT_REQUESTS_PER_DOMAIN": "64"}
	var crawlers []*crawler
	for i := range 3 {
		crawlers = append(crawlers, c.startCrawler(t, "crawler-"+strconv.Itoa(i), lease))
	}
	// Two clients' scripts take turns holding Redis for 200 ms each, by
	// Redis's clock. (Scripts of a fixed number of steps held it for longer
	// the less CPU the machine spared it, 0.4 to 0.9 s each at a load of
	// 10 to 17 on two cores, until Redis ran a plain command more than 2 s
	// after it was sent: longer than a 2 s lease can wait, whoever holds it.)
	stopBusy := c.keepBusy(t, 2, 200*time.Millisecond)
	seed := crawl("link", site.URL("/"), "loaded", 4)
	want := testsite.Reachable(seed.URL, 4, notFile, site)
	c.seed(t, seed)
	counts := c.countPublished(t, "loaded", want, 5*time.Minute)
	c.drained(t, 60*time.Second, "link")
	slowest, median := stopBusy()
	t.Logf("Redis ran a plain command at most %v after it was sent (median %v)", slowest, median)
	c.checkPublishedOnce(t, "loaded", counts, crawlers)
	if p := c.progress(t, "link", "loaded"); p.Published != int64(len(want)) || p.Outstanding() != 0 {
		t.Errorf("ledger: published %d of %d, outstanding %d", p.Published, len(want), p.Outstanding())
	}
	t.Logf("%d pages", len(want))
}

// BenchmarkALargeCrawlPublishesEachPageOnce crawls a site of about 20,000
// pages with one crawler on the default settings (LEASE_TIMEOUT 20,
// CONCURRENT_REQUESTS 16), as the crawl the issue measured on the local
// cluster, and fails when a page is published twice or a lease expires. It
// takes minutes, so it is a benchmark rather than part of make test; run it
// once, with CPU load beside it (e.g. a few `yes > /dev/null`):
//
//	go test -run '^$' -bench LargeCrawl -benchtime 1x ./crawler/e2e/
func BenchmarkALargeCrawlPublishesEachPageOnce(b *testing.B) {
	for range b.N {
		c := newCluster(b)
		// "/" links 180 trees of 1 + 10 + 100 pages.
		site := testsite.Start(b, testsite.WithPages(180), testsite.WithTree(10, 3), testsite.WithMaxHits(1000))
		one := c.startCrawler(b, "crawler", map[string]string{"SC_LOG_LEVEL": "INFO"})
		seed := crawl("link", site.URL("/"), "large", 4)
		want := testsite.Reachable(seed.URL, 4, notFile, site)
		start := time.Now()
		c.seed(b, seed)
		counts := c.countPublished(b, "large", want, 30*time.Minute)
		elapsed := time.Since(start)
		c.drained(b, 2*time.Minute, "link")
		c.checkPublishedOnce(b, "large", counts, []*crawler{one})
		if p := c.progress(b, "link", "large"); p.Published != int64(len(want)) || p.Outstanding() != 0 {
			b.Errorf("ledger: published %d of %d, outstanding %d", p.Published, len(want), p.Outstanding())
		}
		dups := 0
		for _, n := range counts {
			dups += n - 1
		}
		b.ReportMetric(float64(len(want)), "pages")
		b.ReportMetric(float64(len(want))/elapsed.Seconds(), "pages/s")
		b.ReportMetric(float64(dups), "duplicates")
	}
}
