package cluster_test

// Re-crawls on a schedule (issue 25): runs started by the Redis Monitors,
// each with its own page set, results and crawl-complete; stop ending the
// schedule; two monitors, one SIGKILLed, starting each run once.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// freshSite is a loopback site of 13 pages, a tree of fanout 3 and depth
// 2 (/, /a/<i>, /b/<i>/<j>), that serves ETag and Last-Modified,
// answers conditional requests with 304, and changes pages on demand.
//
// Each run of a crawl of it starts with its seed, /, and fetches its other
// pages through it, while runs never overlap: the site counts the requests
// for / to know the run a request belongs to, and can change pages just
// before a given run's first request.
type freshSite struct {
	addr    string
	mu      sync.Mutex
	ver     map[string]int // page -> version (0 at first)
	hits    []freshHit
	roots   int              // requests for / so far: the run
	changes map[int][]string // run -> pages changed at its start
	wire    map[int]int      // run -> bytes sent on the wire for its page requests (robots.txt aside)
}

// freshHit is one request the site answered.
type freshHit struct {
	Run        int
	Path       string
	Validators bool // If-None-Match or If-Modified-Since
	Status     int
	BodyBytes  int
}

var freshEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func startFreshSite(tb testing.TB) *freshSite {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &freshSite{addr: ln.Addr().String(), ver: map[string]int{}, changes: map[int][]string{}, wire: map[int]int{}}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, wireKey{}, c) }}
	go srv.Serve(countingListener{ln, s}) //nolint:errcheck // ends with Close
	tb.Cleanup(func() { srv.Close() })
	return s
}

// countingListener counts the bytes the site writes on each connection
// (status line, headers and body, as sent), for the page request each
// connection serves at the time (an HTTP/1 connection serves one request
// at a time, its handler and its writes in one goroutine).
type countingListener struct {
	net.Listener
	site *freshSite
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, site: l.site, run: -1}, nil
}

type wireKey struct{}

// countingConn is a connection of the site; run is the run of the
// request it serves (-1: none of a page, as robots.txt).
type countingConn struct {
	net.Conn
	site *freshSite
	run  int
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if c.run >= 0 {
		c.site.mu.Lock()
		c.site.wire[c.run] += n
		c.site.mu.Unlock()
	}
	return n, err
}

// wireBytes is what the site sent on the wire for run n's page requests.
func (s *freshSite) wireBytes(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wire[n]
}

func (s *freshSite) url(path string) string { return "http://" + s.addr + path }

// pages are the site's pages, sorted, as URLs.
func (s *freshSite) pages() []string {
	out := []string{s.url("/")}
	for i := range 3 {
		out = append(out, s.url(fmt.Sprintf("/a/%d", i)))
		for j := range 3 {
			out = append(out, s.url(fmt.Sprintf("/b/%d/%d", i, j)))
		}
	}
	slices.Sort(out)
	return out
}

// links are a page's links (nil for a page that is not the site's).
func links(path string) ([]string, bool) {
	switch parts := strings.Split(strings.Trim(path, "/"), "/"); {
	case path == "/":
		return []string{"/a/0", "/a/1", "/a/2"}, true
	case len(parts) == 2 && parts[0] == "a":
		return []string{"/b/" + parts[1] + "/0", "/b/" + parts[1] + "/1", "/b/" + parts[1] + "/2"}, true
	case len(parts) == 3 && parts[0] == "b":
		return nil, true
	}
	return nil, false
}

// changeAt makes a new version of the pages at paths just before run's
// first request.
func (s *freshSite) changeAt(run int, paths ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes[run] = append(s.changes[run], paths...)
}

// runHits returns the requests of run n for the site's pages
// (robots.txt aside).
func (s *freshSite) runHits(n int) []freshHit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []freshHit
	for _, h := range s.hits {
		if h.Run == n && h.Path != "/robots.txt" {
			out = append(out, h)
		}
	}
	return out
}

func (s *freshSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hrefs, ok := links(r.URL.Path)
	s.mu.Lock()
	if r.URL.Path == "/" {
		s.roots++
		for _, p := range s.changes[s.roots] {
			s.ver[p]++
		}
		delete(s.changes, s.roots)
	}
	ver, run := s.ver[r.URL.Path], s.roots
	s.mu.Unlock()
	if c, ok := r.Context().Value(wireKey{}).(*countingConn); ok {
		c.run = run
		if r.URL.Path == "/robots.txt" {
			c.run = -1
		}
	}
	hit := freshHit{Run: run, Path: r.URL.Path, Validators: r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != ""}
	defer func() {
		s.mu.Lock()
		s.hits = append(s.hits, hit)
		s.mu.Unlock()
	}()
	if !ok {
		hit.Status = http.StatusNotFound
		http.NotFound(w, r)
		return
	}
	etag := strconv.Quote(r.URL.Path + "-v" + strconv.Itoa(ver))
	modified := freshEpoch.Add(time.Duration(ver) * time.Hour)
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", modified.Format(http.TimeFormat))
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if inm == etag {
			hit.Status = http.StatusNotModified
			w.WriteHeader(http.StatusNotModified)
			return
		}
	} else if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && !modified.After(ims) {
		hit.Status = http.StatusNotModified
		w.WriteHeader(http.StatusNotModified)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<html><head><title>%s v%d</title></head><body>\n", r.URL.Path, ver)
	for _, h := range hrefs {
		fmt.Fprintf(&b, "<a href=%q>%s</a>\n", h, h)
	}
	fmt.Fprintf(&b, "<p>%s</p></body></html>\n", strings.Repeat("Fresh content of this page. ", 60))
	hit.Status, hit.BodyBytes = http.StatusOK, b.Len()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(b.String())) //nolint:errcheck // the crawler may go away
}

// runOf is a message's run (0 without one).
func runOf(m map[string]any) int {
	f, _ := m["run"].(float64)
	return int(f)
}

// completeOfRun accepts crawlID's crawl-complete of run n.
func completeOfRun(crawlID string, n int) func(map[string]any) bool {
	return func(m map[string]any) bool { return completeOf(crawlID)(m) && runOf(m) == n }
}

// runPages returns the URLs of crawlID's results of run n, sorted, each once.
func runPages(t *topic, crawlID string, n int) []string {
	var out []string
	for _, m := range t.all(byCrawl(crawlID)) {
		if runOf(m) == n {
			out = append(out, m["url"].(string))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// feedScheduled feeds a depth-2 crawl of the site on a schedule.
func feedScheduled(c *cluster, site *freshSite, crawlID string, schedule map[string]any) {
	c.feed(map[string]any{"url": site.url("/"), "appid": appID, "crawlid": crawlID, "maxdepth": 2,
		"allowed_domains": []string{"127.0.0.1"}, "recrawl": schedule})
}

// recrawlSettings are the clusters of these tests: each crawl is fed in one
// message, so no quiet period (LEDGER_COMPLETE_QUIET) is needed before a
// run counts as complete; with the default 5 s a run, and so the start of
// the next one, would wait 5 s after its last page, past the 2 s schedules
// these tests keep.
var recrawlSettings = map[string]string{"LEDGER_COMPLETE_QUIET": "0"}

// TestAScheduledCrawlRunsThreeTimesWithTheSamePageSet feeds a depth-2
// crawl with recrawl {every: 2, runs: 3}: each run crawls the whole site
// again (a fresh duplicate filter; runs 2 and 3 with validators, answered
// 304), every result carries its run, each run
// ends with one crawl-complete carrying its run, info and /crawls/<id>
// show the schedule and the runs' own counts, and no fourth run starts.
func TestAScheduledCrawlRunsThreeTimesWithTheSamePageSet(t *testing.T) {
	site := startFreshSite(t)
	c := newCluster(t, harness.RedisOptions{}, recrawlSettings)
	crawled := c.watch("crawled_firehose")
	outbound := c.watch("outbound_firehose")
	feedScheduled(c, site, "thrice", map[string]any{"every": 2, "runs": 3})
	want := site.pages()
	var started []float64
	for n := 1; n <= 3; n++ {
		done := outbound.await(t, fmt.Sprintf("the crawl-complete of run %d", n), 60*time.Second, completeOfRun("thrice", n))
		if n == 1 {
			checkFinal(t, done, "thrice", "finished", 1, len(want))
		} else { // the site did not change: every page answers its validators with a 304
			checkFinal(t, done, "thrice", "finished", 1, -1)
			if p := progressOf(t, done); fmt.Sprint(p["status_codes"]) != fmt.Sprintf("map[304:%d]", len(want)) || p["published"] != float64(len(want)) {
				t.Errorf("run %d progress %s, want %d pages answered 304 and published", n, brief(p), len(want))
			}
		}
		if got := runPages(crawled, "thrice", n); !slices.Equal(got, want) {
			t.Errorf("run %d crawled\n%s\nwant\n%s", n, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		started = append(started, progressOf(t, done)["started"].(float64))
	}
	for i := 1; i < len(started); i++ {
		if gap := started[i] - started[i-1]; gap < 2 || gap > 4 {
			t.Errorf("run %d started %.3f s after run %d, want every 2 s (within 2 s)", i+1, gap, i)
		}
	}
	for _, m := range crawled.all(byCrawl("thrice")) {
		if n := runOf(m); n < 1 || n > 3 {
			t.Errorf("result of %v has run %v, want 1 to 3", m["url"], m["run"])
		}
	}
	c.feed(map[string]any{"action": "info", "appid": appID, "crawlid": "thrice", "uuid": "info-thrice", "spiderid": "link"})
	info := outbound.await(t, "the info answer", 30*time.Second, byUUID("info-thrice"))
	sched := obj(t, info, "recrawl")
	if sched["every"] != 2.0 || sched["runs"] != 3.0 || sched["runs_started"] != 3.0 || sched["next_run_at"] != nil {
		t.Errorf("info recrawl %s, want every 2, runs 3, runs_started 3, next_run_at null", brief(sched))
	}
	crawl := c.restGet(t, "/crawls/thrice?appid="+appID)
	runs, _ := crawl["runs"].([]any)
	if len(runs) != 3 {
		t.Fatalf("/crawls/thrice runs %v, want 3", crawl["runs"])
	}
	for i, r := range runs {
		run := r.(map[string]any)
		p := obj(t, run, "progress")
		if run["run"] != float64(i+1) || run["completed"] == nil || p["published"] != float64(len(want)) {
			t.Errorf("/crawls/thrice run %d: %s, want run %d completed with %d published", i, brief(run), i+1, len(want))
		}
	}
	// Every run has started: the schedule is off the due set, and no
	// fourth run comes however long one waits (a marker crawl fed after
	// run 3 completes gives the monitors time to look).
	if n := c.rdb.ZCard(t.Context(), "recrawl:due").Val(); n != 0 {
		t.Errorf("recrawl:due holds %d schedules after the last run, want none", n)
	}
	feedScheduled(c, site, "marker", map[string]any{"every": 1, "runs": 2})
	outbound.await(t, "the marker's second run", 60*time.Second, completeOfRun("marker", 2))
	if got := runPages(crawled, "thrice", 4); len(got) > 0 {
		t.Errorf("a fourth run crawled %v", got)
	}
}

// TestStopEndsTheRunAndTheSchedule stops a crawl on a schedule without
// end between two runs: the stop is answered, info shows the schedule
// ended with no next run, and no later run starts.
func TestStopEndsTheRunAndTheSchedule(t *testing.T) {
	site := startFreshSite(t)
	c := newCluster(t, harness.RedisOptions{}, recrawlSettings)
	crawled := c.watch("crawled_firehose")
	outbound := c.watch("outbound_firehose")
	feedScheduled(c, site, "endless", map[string]any{"every": 3})
	outbound.await(t, "the crawl-complete of run 2", 60*time.Second, completeOfRun("endless", 2))
	c.feed(map[string]any{"action": "stop", "appid": appID, "crawlid": "endless", "uuid": "stop-endless", "spiderid": "link"})
	outbound.await(t, "the stop answer", 30*time.Second, byUUID("stop-endless"))
	c.feed(map[string]any{"action": "info", "appid": appID, "crawlid": "endless", "uuid": "info-endless", "spiderid": "link"})
	info := outbound.await(t, "the info answer", 30*time.Second, byUUID("info-endless"))
	sched := obj(t, info, "recrawl")
	if sched["state"] != "ended" || sched["ended_by"] != "stop" || sched["next_run_at"] != nil {
		t.Errorf("info recrawl after the stop %s, want ended by stop, next_run_at null", brief(sched))
	}
	startedRuns := sched["runs_started"].(float64)
	// Twice every later, with a marker crawl's two runs between, no run
	// after the stop has started.
	feedScheduled(c, site, "marker", map[string]any{"every": 3, "runs": 3})
	outbound.await(t, "the marker's third run", 60*time.Second, completeOfRun("marker", 3))
	for n := int(startedRuns) + 1; n <= int(startedRuns)+3; n++ {
		if got := runPages(crawled, "endless", n); len(got) > 0 {
			t.Errorf("run %d started after the stop: %v", n, got)
		}
	}
}

// TestEachRunStartsOnceWithTwoMonitorsOneKilled runs two Redis Monitors,
// SIGKILLs one after run 2 has started, and expects every one of 4 runs to
// start (its results and crawl-complete) exactly once.
func TestEachRunStartsOnceWithTwoMonitorsOneKilled(t *testing.T) {
	site := startFreshSite(t)
	c := newCluster(t, harness.RedisOptions{}, recrawlSettings)
	victim := c.startKillable("redis-monitor-victim", "redis-monitor")
	crawled := c.watch("crawled_firehose")
	outbound := c.watch("outbound_firehose")
	feedScheduled(c, site, "twice-watched", map[string]any{"every": 2, "runs": 4})
	startLines := func() (n int) {
		for _, p := range []*harness.Process{c.proc("redis-monitor"), victim} {
			n += strings.Count(p.Output().String(), "Started a re-crawl run")
		}
		return n
	}
	outbound.await(t, "the crawl-complete of run 2", 60*time.Second, completeOfRun("twice-watched", 2))
	// Lines below WARNING reach the output up to 100 ms after they are
	// logged (logfactory gathers them): the kill waits for run 2's start
	// line, or a run 2 that ended within 100 ms of its start would lose it
	// with the victim and the count below would be of lost lines.
	waitFor(t, "run 2's start in a monitor's log", 30*time.Second, func() bool { return startLines() >= 1 })
	victim.Kill()
	outbound.await(t, "the crawl-complete of run 4", 60*time.Second, completeOfRun("twice-watched", 4))
	// A marker crawl completing after run 4 lets every monitor look again.
	c.feed(map[string]any{"url": site.url("/a/0"), "appid": appID, "crawlid": "marker", "maxdepth": 0})
	outbound.await(t, "the crawl-complete of the marker", 60*time.Second, completeOf("marker"))
	if n := startLines(); n != 3 {
		t.Errorf("the monitors logged %d run starts, want 3 (runs 2 to 4)", n)
	}
	for n := 1; n <= 4; n++ {
		if k := len(outbound.all(completeOfRun("twice-watched", n))); k != 1 {
			t.Errorf("run %d completed %d times, want once", n, k)
		}
		seed := 0
		for _, m := range crawled.all(byCrawl("twice-watched")) {
			if runOf(m) == n && m["url"] == site.url("/") {
				seed++
			}
		}
		if seed != 1 {
			t.Errorf("run %d fetched its seed %d times, want once", n, seed)
		}
	}
}

// TestARerunOfAnUnchangedSiteSendsValidatorsAndTellsWhatChanged crawls
// the site three times (depth 2): run 2, the site unchanged, sends
// validators with at least 90% of its page requests and costs the site at
// most 20% of run 1's body bytes, with the same page set (a 304's links
// are the remembered ones); two pages change before run 3, and exactly
// they say changed: true.
func TestARerunOfAnUnchangedSiteSendsValidatorsAndTellsWhatChanged(t *testing.T) {
	site := startFreshSite(t)
	changed := []string{site.url("/a/1"), site.url("/b/2/0")}
	site.changeAt(3, "/a/1", "/b/2/0")
	c := newCluster(t, harness.RedisOptions{}, recrawlSettings)
	crawled := c.watch("crawled_firehose")
	outbound := c.watch("outbound_firehose")
	feedScheduled(c, site, "fresh", map[string]any{"every": 2, "runs": 3})
	want := site.pages()
	for n := 1; n <= 3; n++ {
		done := outbound.await(t, fmt.Sprintf("the crawl-complete of run %d", n), 60*time.Second, completeOfRun("fresh", n))
		if got := runPages(crawled, "fresh", n); !slices.Equal(got, want) {
			t.Errorf("run %d crawled\n%s\nwant\n%s", n, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if n == 2 {
			if p := progressOf(t, done); p["unchanged"] != float64(len(want)) {
				t.Errorf("run 2's progress %s, want all %d pages unchanged", brief(p), len(want))
			}
		}
	}
	bytes := func(hits []freshHit) (n int) {
		for _, h := range hits {
			n += h.BodyBytes
		}
		return n
	}
	run1, run2 := site.runHits(1), site.runHits(2)
	withValidators := 0
	for _, h := range run2 {
		if h.Validators {
			withValidators++
		}
	}
	t.Logf("run 1: %d requests, %d body bytes; run 2: %d requests (%d with validators), %d body bytes",
		len(run1), bytes(run1), len(run2), withValidators, bytes(run2))
	if len(run2) == 0 || withValidators*10 < len(run2)*9 {
		t.Errorf("run 2 sent validators with %d of %d page requests, want at least 90%%", withValidators, len(run2))
	}
	if bytes(run2)*5 > bytes(run1) {
		t.Errorf("run 2 cost %d body bytes, run 1 %d: want at most 20%%", bytes(run2), bytes(run1))
	}
	for n := 1; n <= 3; n++ {
		var gotChanged []string
		for _, m := range crawled.all(byCrawl("fresh")) {
			if runOf(m) != n {
				continue
			}
			ch, ok := m["changed"].(bool)
			if !ok {
				t.Errorf("run %d result of %v: changed is %v, want a boolean", n, m["url"], m["changed"])
			}
			if ch {
				gotChanged = append(gotChanged, m["url"].(string))
			}
			if n >= 2 && !ch && m["status_code"] != 304.0 {
				t.Errorf("run %d: unchanged %v has status_code %v, want 304", n, m["url"], m["status_code"])
			}
		}
		slices.Sort(gotChanged)
		gotChanged = slices.Compact(gotChanged)
		wantChanged := map[int][]string{1: want, 2: nil, 3: changed}[n]
		if !slices.Equal(gotChanged, wantChanged) {
			t.Errorf("run %d: changed pages %v, want %v", n, gotChanged, wantChanged)
		}
	}
}

// TestEmitChangedPublishesOnlyTheChangedPages crawls the site three times
// with emit "changed": run 1 publishes every page, run 2 (nothing
// changed) none, counting them unchanged and withheld, run 3 exactly the
// two pages changed before it, the others still crawled through.
func TestEmitChangedPublishesOnlyTheChangedPages(t *testing.T) {
	site := startFreshSite(t)
	site.changeAt(3, "/", "/b/0/2")
	c := newCluster(t, harness.RedisOptions{}, recrawlSettings)
	crawled := c.watch("crawled_firehose")
	outbound := c.watch("outbound_firehose")
	feedScheduled(c, site, "changes", map[string]any{"every": 2, "runs": 3, "emit": "changed"})
	want := map[int][]string{1: site.pages(), 2: nil, 3: {site.url("/"), site.url("/b/0/2")}}
	for n := 1; n <= 3; n++ {
		done := outbound.await(t, fmt.Sprintf("the crawl-complete of run %d", n), 60*time.Second, completeOfRun("changes", n))
		if got := runPages(crawled, "changes", n); !slices.Equal(got, want[n]) {
			t.Errorf("run %d published\n%s\nwant\n%s", n, strings.Join(got, "\n"), strings.Join(want[n], "\n"))
		}
		p := progressOf(t, done)
		if n > 1 && (p["withheld"] != float64(13-len(want[n])) || p["unchanged"] != p["withheld"] || p["published"] != float64(len(want[n]))) {
			t.Errorf("run %d progress %s, want %d published and %d unchanged and withheld", n, brief(p), len(want[n]), 13-len(want[n]))
		}
		if hits := site.runHits(n); len(hits) != 13 {
			t.Errorf("run %d made %d page requests, want the 13 pages", n, len(hits))
		}
	}
}

// BenchmarkRerunCost crawls the 13-page site (depth 2) twice with the
// binaries, unchanged between the runs, and reports what run 2 cost the
// site against run 1 (page requests, robots.txt aside): its requests, its
// body bytes and its bytes on the wire (status lines, headers and bodies,
// as the site's connections wrote them), each in percent of run 1's, and
// the share of run 2's requests that carried validators. Each figure is
// the ratio of the sums over b.N crawls.
func BenchmarkRerunCost(b *testing.B) {
	var req1, req2, body1, body2, wire1, wire2, validators int
	for range b.N {
		site := startFreshSite(b)
		c := newCluster(b, harness.RedisOptions{}, recrawlSettings)
		outbound := c.watch("outbound_firehose")
		feedScheduled(c, site, "cost", map[string]any{"every": 1, "runs": 2})
		outbound.await(b, "the crawl-complete of run 2", 120*time.Second, completeOfRun("cost", 2))
		run1, run2 := site.runHits(1), site.runHits(2)
		if len(run1) != 13 || len(run2) != 13 {
			b.Fatalf("run 1 made %d page requests, run 2 %d: want the 13 pages each", len(run1), len(run2))
		}
		req1, req2 = req1+len(run1), req2+len(run2)
		for _, h := range run1 {
			body1 += h.BodyBytes
		}
		for _, h := range run2 {
			body2 += h.BodyBytes
			if h.Validators {
				validators++
			}
		}
		wire1, wire2 = wire1+site.wireBytes(1), wire2+site.wireBytes(2)
	}
	b.ReportMetric(100*float64(req2)/float64(req1), "rerun-requests-%")
	b.ReportMetric(100*float64(body2)/float64(body1), "rerun-body-bytes-%")
	b.ReportMetric(100*float64(wire2)/float64(wire1), "rerun-wire-bytes-%")
	b.ReportMetric(100*float64(validators)/float64(req2), "rerun-validators-%")
	b.ReportMetric(float64(wire1)/float64(b.N), "run1-wire-bytes")
	b.ReportMetric(float64(wire2)/float64(b.N), "run2-wire-bytes")
}
