package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// innerHost marks a request a wrapping handler passes on to the site's
// built-in pages: the wrapper's route is bound to the site's host, so the
// request with this Host falls through to the built-in page. The site logs
// such a request a second time; count hits with Host == site.Addr() only.
const innerHost = "inner.invalid"

// wrapTree serves the site's tree pages (/page/...) through wrap: wrap
// decides how to answer (e.g. wait first) and calls builtin for the page.
// The option must be given to a site started at host (e.g. "127.0.0.1");
// set the site in *site before it gets requests.
func wrapTree(host string, site *atomic.Pointer[testsite.Site], wrap func(w http.ResponseWriter, r *http.Request, builtin http.HandlerFunc)) testsite.Option {
	builtin := func(w http.ResponseWriter, r *http.Request) {
		inner := r.Clone(r.Context())
		inner.Host = innerHost
		site.Load().ServeHTTP(w, inner)
	}
	return testsite.WithHandler(host+"/page/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wrap(w, r, builtin)
	}))
}

// pause waits d, or until the client goes away or done closes; it reports
// whether all of d passed.
func pause(r *http.Request, d time.Duration, done <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-done:
	}
	return false
}

// victimUA is the user agent of the crawler a test kills.
const victimUA = "victim/1.0"

// startVictimSite starts a site whose tree page fetches by victimUA never get
// an answer (they are held until the test ends), while the others get theirs
// after delay, so that a crawl is under way while the victim is killed.
func startVictimSite(t *testing.T, delay time.Duration, opts ...testsite.Option) *testsite.Site {
	t.Helper()
	var site atomic.Pointer[testsite.Site]
	testOver := make(chan struct{})
	opt := wrapTree("127.0.0.1", &site, func(w http.ResponseWriter, r *http.Request, builtin http.HandlerFunc) {
		if r.UserAgent() == victimUA {
			pause(r, time.Hour, testOver)
			panic(http.ErrAbortHandler) // no answer, ever
		}
		if !pause(r, delay, testOver) {
			panic(http.ErrAbortHandler)
		}
		builtin(w, r)
	})
	site.Store(testsite.Start(t, append([]testsite.Option{opt}, opts...)...))
	t.Cleanup(func() { close(testOver) }) // before the site closes: it waits for its handlers
	return site.Load()
}

// victimTreeHits are the tree page requests the victim has made to s.
func victimTreeHits(s *testsite.Site) []testsite.Hit {
	return hitsBy(s, func(h testsite.Hit) bool {
		return h.Host == s.Addr() && h.UserAgent == victimUA && strings.HasPrefix(h.Path, "/page/")
	})
}

// startSurvivors starts n crawlers, survivor-1 to survivor-n, each with its
// own user agent and with the settings env.
func (c *cluster) startSurvivors(t *testing.T, n int, env map[string]string) []*crawler {
	t.Helper()
	var survivors []*crawler
	for i := range n {
		survivors = append(survivors, c.startCrawler(t, fmt.Sprintf("survivor-%d", i+1), with(env, "USER_AGENT", fmt.Sprintf("survivor-%d/1.0", i+1))))
	}
	return survivors
}

func TestKilledCrawlerLosesNoPage(t *testing.T) {
	c := newCluster(t)
	// The victim's tree page fetches never get an answer: it holds them until
	// it dies. The others get theirs after 100 ms, so the crawl is under way
	// while the victim is killed.
	s := startVictimSite(t, 100*time.Millisecond)

	seed := crawl("link", s.URL("/"), "killed", 3)
	want := testsite.Reachable(seed.URL, 3, notFile, s)
	lease := map[string]string{"LEASE_TIMEOUT": "2", "LEASE_REAP_INTERVAL": "1"}
	victim := c.startCrawler(t, "victim", with(lease, "USER_AGENT", victimUA))
	c.seed(t, seed)

	// The victim crawls alone until it holds two tree pages: with the
	// survivors already running, they could crawl the whole tree before it
	// got two (CI saw that once).
	victimHits := func() []testsite.Hit { return victimTreeHits(s) }
	harness.WaitFor(t, "the victim to hold two tree pages in flight", 30*time.Second, func() bool { return len(victimHits()) >= 2 })
	survivors := c.startSurvivors(t, 2, lease)
	if n := c.leases(t, "link"); n < 2 {
		t.Fatalf("%d requests leased while the victim holds two", n)
	}
	victim.kill()
	killedAt := time.Now()
	held := victimHits()

	counts := c.resultsFor(t, "killed", want, 60*time.Second)
	c.drained(t, 30*time.Second, "link")
	for u, n := range counts {
		if !slices.Contains(want, u) {
			t.Errorf("crawled %s (%d times), which the crawl does not reach", u, n)
		}
	}
	// What the victim held was fetched again, by a survivor, after the kill.
	for _, h := range held {
		again := hitsBy(s, func(x testsite.Hit) bool {
			return x.Host == s.Addr() && x.Path == h.Path && x.UserAgent != victimUA && x.Time.After(killedAt)
		})
		if len(again) == 0 {
			t.Errorf("%s, held by the victim, was not fetched again after the kill", h.Path)
		}
	}
	reaped := false
	for _, p := range survivors {
		reaped = reaped || p.out.Contains("Returned requests of a stopped crawler to their queues")
	}
	if !reaped {
		t.Error("no survivor logged that it returned the victim's requests to their queues")
	}
	t.Logf("victim held %d requests when killed; %d pages expected, %d results", len(held), len(want), len(c.read))
}

// with returns base with the settings kv (name, value, ...) added.
func with(base map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	maps.Copy(out, base)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func TestFourCrawlersRespectTheClusterThrottle(t *testing.T) {
	const hits, window = 5, 2 * time.Second
	// The throttle counts pops by the Redis clock: those are checked exactly.
	// The site sees each fetch a little after its pop, by a varying delay
	// (scheduling, the HTTP round trip), so its windows are checked with
	// this much allowance.
	const jitter = 200 * time.Millisecond
	for _, moderated := range []bool{false, true} {
		t.Run("moderated="+strconv.FormatBool(moderated), func(t *testing.T) {
			t.Parallel()
			c := newCluster(t)
			const pages = 3*hits + 1
			site := testsite.Start(t, testsite.WithPages(pages))
			var seeds []*crawlrequest.Request
			var want []string
			for i := 1; i <= pages; i++ {
				seeds = append(seeds, crawl("link", site.URL("/page/"+strconv.Itoa(i)), "backlog", 0))
				want = append(want, site.URL("/page/"+strconv.Itoa(i)))
			}
			domain, err := rediskeys.DomainOfURL(site.URL("/"))
			if err != nil {
				t.Fatal(err)
			}
			pops := c.watchWindow(t, rediskeys.ThrottleKey("link", "", domain, true, false)+throttle.WindowSuffix)
			c.seed(t, seeds...) // the backlog, there before the crawlers start
			for i := range 4 {
				c.startCrawler(t, fmt.Sprintf("crawler-%d", i+1), map[string]string{
					"QUEUE_HITS": strconv.Itoa(hits), "QUEUE_WINDOW": strconv.Itoa(int(window.Seconds())),
					"QUEUE_MODERATED": strconv.FormatBool(moderated), "USER_AGENT": fmt.Sprintf("crawler-%d/1.0", i+1),
				})
			}
			c.resultsFor(t, "backlog", want, 30*time.Second)
			c.drained(t, 10*time.Second, "link")
			c.noMoreResults(t)

			popped, fetches := pops(), fetchTimes(site)
			if len(popped) != pages || len(fetches) != pages {
				t.Fatalf("%d pops and %d fetches, want %d of each (one per page)", len(popped), len(fetches), pages)
			}
			if span, at := shortestSpan(popped, hits+1); span < window {
				t.Errorf("%d pops within %s from %s, by the Redis clock; the throttle allows %d per %s; pop times:\n%s",
					hits+1, span, at.Format("15:04:05.000000"), hits, window, formatTimes(popped))
			}
			if span, at := shortestSpan(fetches, hits+1); span < window-jitter {
				t.Errorf("%d fetches within %s from %s; the throttle allows %d per %s; fetch times:\n%s",
					hits+1, span, at.Format("15:04:05.000"), hits, window, formatTimes(fetches))
			}
			// Progress: the crawl used its windows, not just stayed under them.
			if full := fullWindows(fetches, hits, window); full < pages/hits-1 {
				t.Errorf("%d full windows (%d fetches within %s), want at least %d; fetch times:\n%s",
					full, hits, window, pages/hits-1, formatTimes(fetches))
			}
			by := map[string]int{}
			for _, h := range site.Hits() {
				by[h.UserAgent]++
			}
			popSpan, _ := shortestSpan(popped, hits+1)
			fetchSpan, _ := shortestSpan(fetches, hits+1)
			t.Logf("fetches by crawler: %v; first to last %s; shortest span of %d pops %s, of %d fetches %s",
				by, fetches[len(fetches)-1].Sub(fetches[0]).Round(time.Millisecond), hits+1, popSpan, hits+1, fetchSpan)
		})
	}
}

// watchWindow polls a throttle window (a sorted set of hit ids scored by
// the Redis time of each pop) every 20 ms from now on, and keeps every hit
// it sees: a hit stays in the window for the window's length, far longer.
// The returned function stops the polling and returns the pop times, in
// order.
func (c *cluster) watchWindow(tb testing.TB, key string) func() []time.Time {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	seen := map[string]float64{}
	poll := func(ctx context.Context) {
		hits, err := c.rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			return // stopping, or Redis gone: the count check reports it
		}
		for _, h := range hits {
			seen[h.Member.(string)] = h.Score
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			poll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	var out []time.Time
	stop := func() []time.Time {
		once.Do(func() {
			cancel()
			<-done
			poll(context.Background())
			for _, score := range seen {
				out = append(out, time.UnixMicro(int64(math.Round(score*1e6))))
			}
			slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
		})
		return out
	}
	tb.Cleanup(func() { stop() })
	return stop
}

// fetchTimes returns the times the site received page requests, in order.
func fetchTimes(site *testsite.Site) []time.Time {
	var out []time.Time
	for _, h := range site.Hits() {
		if h.Path != "/robots.txt" {
			out = append(out, h.Time)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// shortestSpan returns the shortest time n consecutive times (sorted) take,
// first to last, and where that span starts; a window of W holds at most
// n-1 of them when the span is at least W.
func shortestSpan(times []time.Time, n int) (time.Duration, time.Time) {
	span, at := time.Duration(math.MaxInt64), time.Time{}
	for i := 0; i+n-1 < len(times); i++ {
		if d := times[i+n-1].Sub(times[i]); d < span {
			span, at = d, times[i]
		}
	}
	return span, at
}

// fullWindows counts disjoint runs of hits fetches within one window w.
func fullWindows(times []time.Time, hits int, w time.Duration) int {
	n := 0
	for i := 0; i+hits-1 < len(times); {
		if times[i+hits-1].Sub(times[i]) < w {
			n++
			i += hits
		} else {
			i++
		}
	}
	return n
}

func formatTimes(times []time.Time) string {
	var b strings.Builder
	for _, t := range times {
		fmt.Fprintf(&b, "  %s (+%s)\n", t.Format("15:04:05.000"), t.Sub(times[0]).Round(time.Millisecond))
	}
	return b.String()
}

// walkSteps is how many hops the wandering spider makes on /walk/0..
const walkSteps = 5

// walk serves /walk/<n>: a page whose only link is /walk/<n+1>, up to
// /walk/<walkSteps>, which has none; the wandering spider's path is fixed.
var walk = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	// (Not r.PathValue: the site's extra routes do not set path values.)
	n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/walk/"))
	if err != nil || n < 0 || n > walkSteps {
		http.NotFound(w, r)
		return
	}
	next := ""
	if n < walkSteps {
		next = fmt.Sprintf(`<a href="/walk/%d">next</a>`, n+1)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!DOCTYPE html><html><head><title>Walk %d</title></head><body><p>Step %d.</p>%s</body></html>\n", n, n, next)
})

func TestLinkAndWanderingCrawlersShareOneCluster(t *testing.T) {
	c := newCluster(t)
	site := testsite.Start(t, testsite.WithHandler("GET /walk/", walk))
	const linkUA, wanderingUA = "link-crawler/1.0", "wandering-crawler/1.0"
	c.startCrawler(t, "link", map[string]string{"USER_AGENT": linkUA}, "--spider", "link")
	c.startCrawler(t, "wandering", map[string]string{"USER_AGENT": wanderingUA}, "--spider", "wandering")

	linkSeed := crawl("link", site.URL("/"), "links", 1)
	wanderSeed := crawl("wandering", site.URL("/walk/0"), "wander", 0)
	c.seed(t, linkSeed, wanderSeed) // both at once
	wantLinks := testsite.Reachable(linkSeed.URL, 1, notFile, site)
	var wantWalk []string
	for i := 0; i <= walkSteps; i++ {
		wantWalk = append(wantWalk, site.URL(fmt.Sprintf("/walk/%d", i)))
	}
	c.resultsFor(t, "links", wantLinks, 30*time.Second)
	c.resultsFor(t, "wander", wantWalk, 30*time.Second)
	c.drained(t, 10*time.Second, "link", "wandering")
	c.noMoreResults(t)

	var gotLinks, gotWalk []string
	for _, p := range c.read {
		switch p.CrawlID {
		case "links":
			gotLinks = append(gotLinks, p.URL)
			if _, ok := attrs(t, p)["step"]; ok {
				t.Errorf("link result %s has a wandering step: %s", p.URL, p.Attrs)
			}
			// As the original: a page's result lists the links followed
			// from it, so the seed's has links and those at maxdepth none.
			if seed := p.URL == linkSeed.URL; seed != (len(p.Links) > 0) {
				t.Errorf("link result %s (seed: %v) has %d links", p.URL, seed, len(p.Links))
			}
		case "wander":
			gotWalk = append(gotWalk, p.URL)
			step, ok := attrs(t, p)["step"]
			if want := float64(slices.Index(wantWalk, p.URL)); !ok || step != want {
				t.Errorf("wandering result %s has attrs %s, want step %v", p.URL, p.Attrs, want)
			}
		default:
			t.Errorf("result of an unknown crawl: %s %s", p.CrawlID, p.URL)
		}
	}
	slices.Sort(gotLinks)
	slices.Sort(gotWalk)
	if !slices.Equal(gotLinks, wantLinks) {
		t.Errorf("link crawl results:\n%v\nwant:\n%v", gotLinks, wantLinks)
	}
	if !slices.Equal(gotWalk, wantWalk) {
		t.Errorf("wandering crawl results:\n%v\nwant:\n%v", gotWalk, wantWalk)
	}
	// Each crawl was fetched by its own spider's process only.
	for _, h := range site.Hits() {
		wantUA := linkUA
		if strings.HasPrefix(h.Path, "/walk/") {
			wantUA = wanderingUA
		}
		if h.UserAgent != wantUA {
			t.Errorf("%s fetched by %q, want %q", h.Path, h.UserAgent, wantUA)
		}
	}
}

// attrs decodes a result's attrs (null is an empty map).
func attrs(t *testing.T, p *spider.Page) map[string]any {
	t.Helper()
	m := map[string]any{}
	if len(p.Attrs) > 0 && string(p.Attrs) != "null" {
		if err := json.Unmarshal(p.Attrs, &m); err != nil {
			t.Fatalf("attrs of %s: %v: %s", p.URL, err, p.Attrs)
		}
	}
	return m
}

// TestCrawlerSetsItsGarbageCollectorFromItsMemoryBound: a crawler runs Go's
// collector at GOGC=400 with a soft memory limit of 2 × CONCURRENT_REQUESTS
// × DOWNLOAD_MAXSIZE + 3 × KAFKA_PRODUCER_MAX_REQUEST_SIZE (its results
// waiting for Kafka) + FOLLOWUPS_HELD_BYTES + 64 MiB, and says so at start;
// GOGC and GOMEMLIMIT in its environment win.
func TestCrawlerSetsItsGarbageCollectorFromItsMemoryBound(t *testing.T) {
	c := newCluster(t)
	small := map[string]string{"CONCURRENT_REQUESTS": "4", "DOWNLOAD_MAXSIZE": strconv.Itoa(1 << 20), "FOLLOWUPS_HELD_BYTES": strconv.Itoa(5 << 20)}
	withEnv := maps.Clone(small)
	withEnv["GOGC"], withEnv["GOMEMLIMIT"] = "100", "1GiB"
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		want      map[string]any
	}{
		{"defaults", small, map[string]any{"gogc": 400.0, "gogc_from_env": false,
			"memory_limit_bytes": float64(2*4<<20 + 3<<20 + 5<<20 + 64<<20), "memory_limit_from_env": false}},
		{"environment", withEnv, map[string]any{"gogc": 100.0, "gogc_from_env": true,
			"memory_limit_bytes": float64(1 << 30), "memory_limit_from_env": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := c.startCrawler(t, "gc-"+tc.name, tc.overrides)
			const msg = "Go garbage collector set"
			deadline := time.Now().Add(30 * time.Second)
			for !p.out.Contains(msg) {
				if p.exited() || time.Now().After(deadline) {
					t.Fatalf("no %q line from the crawler; output:\n%s", msg, p.out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			for line := range strings.SplitSeq(p.out.String(), "\n") {
				if !strings.Contains(line, msg) {
					continue
				}
				var got map[string]any
				if err := json.Unmarshal([]byte(line), &got); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				for k, want := range tc.want {
					if got[k] != want {
						t.Errorf("%s = %v, want %v (line %s)", k, got[k], want, line)
					}
				}
			}
		})
	}
}
