package rediscluster_test

// Re-crawl schedules on a Redis Cluster (docs/recrawl.md): runs started by
// the Redis Monitor in three steps over the masters, each run with its own
// page set, results, change fields, ledger and crawl-complete.

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

// freshSites are n loopback sites, one domain each (127.0.0.2, ...), that
// serve ETag and Last-Modified, answer conditional requests with 304 and
// change pages on demand. Site 0's "/" links to its pages /p/0../p/2 and
// to every other site's "/", whose own "/" links to its pages /p/0../p/2.
// The requests for site 0's "/" count the runs (runs never overlap).
type freshSites struct {
	mu      sync.Mutex
	addrs   []string
	ver     map[string]int      // url -> version
	changes map[int][]string    // run -> urls changed just before its first request
	hits    map[int][]freshSeen // run -> requests
	run     int
}

type freshSeen struct {
	URL        string
	Validators bool
	Status     int
}

func startFreshSites(t *testing.T, n int) *freshSites {
	t.Helper()
	fs := &freshSites{ver: map[string]int{}, changes: map[int][]string{}, hits: map[int][]freshSeen{}}
	for i := range n {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:0", i+2))
		if err != nil {
			t.Fatal(err)
		}
		fs.addrs = append(fs.addrs, ln.Addr().String())
		srv := &http.Server{Handler: fs.handler(i), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln) //nolint:errcheck // ends with Close
		t.Cleanup(func() { srv.Close() })
	}
	return fs
}

func (fs *freshSites) url(i int, path string) string { return "http://" + fs.addrs[i] + path }

// domains are the sites' domains as the cluster keys them.
func (fs *freshSites) domains(t *testing.T) []string {
	var out []string
	for i := range fs.addrs {
		d, err := rediskeys.DomainOfURL(fs.url(i, "/"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// pages are every site's pages, sorted: what a depth-2 crawl from site 0's
// "/" reaches.
func (fs *freshSites) pages() []string {
	var out []string
	for i := range fs.addrs {
		out = append(out, fs.url(i, "/"))
		for j := range 3 {
			out = append(out, fs.url(i, fmt.Sprintf("/p/%d", j)))
		}
	}
	slices.Sort(out)
	return out
}

func (fs *freshSites) changeAt(run int, urls ...string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.changes[run] = append(fs.changes[run], urls...)
}

func (fs *freshSites) seen(run int) []freshSeen {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return slices.Clone(fs.hits[run])
}

func (fs *freshSites) handler(i int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var hrefs []string
		switch {
		case r.URL.Path == "/":
			for j := range 3 {
				hrefs = append(hrefs, fmt.Sprintf("/p/%d", j))
			}
			if i == 0 {
				for k := 1; k < len(fs.addrs); k++ {
					hrefs = append(hrefs, fs.url(k, "/"))
				}
			}
		case strings.HasPrefix(r.URL.Path, "/p/"):
		default:
			http.NotFound(w, r)
			return
		}
		u := fs.url(i, r.URL.Path)
		fs.mu.Lock()
		if i == 0 && r.URL.Path == "/" {
			fs.run++
			for _, c := range fs.changes[fs.run] {
				fs.ver[c]++
			}
		}
		ver, run := fs.ver[u], fs.run
		seen := freshSeen{URL: u, Validators: r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != ""}
		fs.mu.Unlock()
		etag := strconv.Quote(r.URL.Path + "-v" + strconv.Itoa(ver))
		modified := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(ver) * time.Hour)
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", modified.Format(http.TimeFormat))
		seen.Status = http.StatusOK
		if r.Header.Get("If-None-Match") == etag {
			seen.Status = http.StatusNotModified
		}
		fs.mu.Lock()
		fs.hits[run] = append(fs.hits[run], seen)
		fs.mu.Unlock()
		if seen.Status == http.StatusNotModified {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>%s v%d</title></head><body>\n", r.URL.Path, ver)
		for _, h := range hrefs {
			fmt.Fprintf(&b, "<a href=%q>%s</a>\n", h, h)
		}
		b.WriteString("<p>Fresh content.</p></body></html>\n")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(b.String())) //nolint:errcheck // the crawler may go away
	})
}

func runOf(m map[string]any) int64 {
	f, _ := m["run"].(float64)
	return int64(f)
}

func completionOfRun(crawlID string, n int64) func(map[string]any) bool {
	return func(m map[string]any) bool { return completion(crawlID)(m) && runOf(m) == n }
}

// runResults are crawlID's results of run n: how many each URL got, and
// the URLs whose result says changed: true.
func runResults(crawled *messages, crawlID string, n int64) (counts map[string]int, changed []string) {
	counts = map[string]int{}
	found, _ := crawled.where(func(m map[string]any) bool { return m["crawlid"] == crawlID && runOf(m) == n })
	for _, m := range found {
		u, _ := m["url"].(string)
		counts[u]++
		if m["changed"] == true {
			changed = append(changed, u)
		}
	}
	slices.Sort(changed)
	return counts, changed
}

// checkRun checks run n of crawlID: one crawl-complete, every page of want
// published exactly once and nothing else.
func checkRun(t *testing.T, outbound, crawled *messages, crawlID string, n int64, want []string) map[string]any {
	t.Helper()
	done, _ := outbound.first(t, fmt.Sprintf("the crawl-complete of run %d", n), completionOfRun(crawlID, n))
	if !harness.Until(60*time.Second, func() bool {
		counts, _ := runResults(crawled, crawlID, n)
		return len(counts) >= len(want)
	}) {
		counts, _ := runResults(crawled, crawlID, n)
		t.Fatalf("run %d published %d of %d pages: %v; its crawl-complete: %v", n, len(counts), len(want), counts, done)
	}
	counts, _ := runResults(crawled, crawlID, n)
	got := slices.Sorted(maps.Keys(counts))
	if !slices.Equal(got, want) {
		t.Errorf("run %d crawled\n%s\nwant\n%s", n, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for u, k := range counts {
		if k != 1 {
			t.Errorf("run %d published %s %d times", n, u, k)
		}
	}
	if done["reason"] != "finished" || num(done, "progress", "seeds") != 1 || num(done, "progress", "done") != int64(len(want)) {
		t.Errorf("run %d's crawl-complete %v: want finished, 1 seed, %d done", n, done, len(want))
	}
	return done
}

// A scheduled crawl over 8 domains, their keys on all three masters, runs
// three times on a Redis Cluster: each run publishes the whole page set
// once, with its run, and one crawl-complete with its run; runs 2 and 3
// send validators (answered 304) and say changed: false, except the two
// pages changed before run 3; info shows the schedule, and the past runs'
// ledgers, summed over the domains, are those of whole runs.
func TestScheduledCrawlRunsThreeTimesOnARedisCluster(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	sites := startFreshSites(t, 8)
	changed := []string{sites.url(3, "/p/1"), sites.url(6, "/")}
	slices.Sort(changed)
	sites.changeAt(3, changed...)
	want := sites.pages()
	masters := map[string]bool{}
	for _, d := range sites.domains(t) {
		masters[rc.MasterOf(t, rediskeys.Cluster.Queue("link", d)).Addr] = true
	}
	if len(masters) != 3 {
		t.Fatalf("the 8 domains' keys are on %d masters, want 3", len(masters))
	}
	env := clusterEnv(rc, k, map[string]string{"LEDGER_COMPLETE_QUIET": "0"})
	startComponents(t, env, "kafka-monitor", "crawler-1", "crawler-2", "redis-monitor")
	outbound := readAll(t, k, "outbound_firehose")
	crawled := readAll(t, k, "crawled_firehose")
	feed(t, env, fmt.Sprintf(`{"url": %q, "appid": "e2e", "crawlid": "thrice", "spiderid": "link", "maxdepth": 2, "recrawl": {"every": 2, "runs": 3}}`,
		sites.url(0, "/")))

	for n := int64(1); n <= 3; n++ {
		done := checkRun(t, outbound, crawled, "thrice", n, want)
		_, gotChanged := runResults(crawled, "thrice", n)
		switch n {
		case 1:
			if len(gotChanged) != len(want) {
				t.Errorf("run 1: %d pages changed, want all %d", len(gotChanged), len(want))
			}
		case 2:
			if len(gotChanged) != 0 || num(done, "progress", "unchanged") != int64(len(want)) {
				t.Errorf("run 2: changed %v, progress %v; want none changed, all %d unchanged", gotChanged, done["progress"], len(want))
			}
		case 3:
			if !slices.Equal(gotChanged, changed) || num(done, "progress", "unchanged") != int64(len(want)-len(changed)) {
				t.Errorf("run 3: changed %v, progress %v; want %v changed", gotChanged, done["progress"], changed)
			}
		}
		if n >= 2 {
			for _, s := range sites.seen(int(n)) {
				if !s.Validators {
					t.Errorf("run %d fetched %s without validators", n, s.URL)
				}
			}
		}
	}
	for n := int64(1); n <= 3; n++ {
		if all, _ := outbound.where(completionOfRun("thrice", n)); len(all) != 1 {
			t.Errorf("run %d completed %d times, want once", n, len(all))
		}
	}
	feedLines(t, k, map[string]any{"action": "info", "appid": "e2e", "crawlid": "thrice", "uuid": "info-thrice", "spiderid": "link"})
	info, _ := outbound.first(t, "the info answer", uuid("info-thrice"))
	if num(info, "recrawl", "runs_started") != 3 || field(info, "recrawl", "next_run_at") != nil || field(info, "recrawl", "state") != "active" {
		t.Errorf("info recrawl %v, want 3 runs started, no next run", info["recrawl"])
	}
	c := rc.TestClient(t)
	cr := ledger.Crawl{SpiderID: "link", AppID: "e2e", CrawlID: "thrice"}
	ctx := context.Background()
	current, err := ledger.ReadClusterCrawls(ctx, c, cr.SpiderID, cr.AppID, cr.CrawlID)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := ledger.RunsCluster(ctx, c, cr, current[cr])
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs, want 3: %+v", len(runs), runs)
	}
	for i, r := range runs {
		if r.Run != int64(i+1) || r.Completed == nil || r.Progress.Published != int64(len(want)) || r.Progress.Seeds != 1 {
			t.Errorf("run entry %d: run %d, completed %v, %+v; want run %d completed with %d published and 1 seed",
				i, r.Run, r.Completed, r.Progress, i+1, len(want))
		}
	}
	if n := c.ZCard(ctx, rediskeys.Cluster.RecrawlDue()).Val(); n != 0 {
		t.Errorf("the due set holds %d schedules after the last run, want none", n)
	}
}

// A run's start interrupted after its claim and one domain's step (a
// monitor that died between the steps, played by calling the scripts
// directly) is finished by the Redis Monitor's next look: the run's
// crawl-complete waits for it (the claim holds it), then comes once with
// the whole page set.
func TestAnInterruptedRunStartIsFinishedOnARedisCluster(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	sites := startFreshSites(t, 4)
	want := sites.pages()
	env := clusterEnv(rc, k, map[string]string{"LEDGER_COMPLETE_QUIET": "0"})
	startComponents(t, env, "kafka-monitor", "crawler-1", "redis-monitor")
	outbound := readAll(t, k, "outbound_firehose")
	crawled := readAll(t, k, "crawled_firehose")
	feed(t, env, fmt.Sprintf(`{"url": %q, "appid": "e2e", "crawlid": "cut", "spiderid": "link", "maxdepth": 2, "recrawl": {"every": 3600, "runs": 2}}`,
		sites.url(0, "/")))
	checkRun(t, outbound, crawled, "cut", 1, want)

	// Claim run 2 as a monitor would an hour from now, and start it in one
	// domain that has no seed, then stop there.
	c := rc.TestClient(t)
	ctx := context.Background()
	l := rediskeys.Cluster
	cr := ledger.Crawl{SpiderID: "link", AppID: "e2e", CrawlID: "cut"}
	later := time.Now().Add(2 * time.Hour)
	ttl := 24 * time.Hour
	domains := sites.domains(t)
	marker := l.Completed(cr.SpiderID, cr.AppID, cr.CrawlID)
	harness.WaitFor(t, "run 1's completion marker to say done", 30*time.Second, func() bool {
		v, err := c.Get(ctx, marker).Result()
		return err == nil && strings.HasPrefix(v, "done|")
	})
	claim := redisscripts.RecrawlClusterClaim{Schedule: redisscripts.Schedule{Hash: l.Recrawl(cr.SpiderID, cr.AppID, cr.CrawlID), Due: l.RecrawlDue()},
		Marker: marker, Starting: l.RecrawlStarting(), Member: cr.Member(), N: 2,
		Hold: redisscripts.RecrawlHoldPrefix(2) + ledger.Stamp(later.Add(ttl)), Margin: 2 * time.Second, Domains: domains,
		Stamp: ledger.Stamp(later), TTL: ttl}
	if got, err := redisscripts.Eval(ctx, c, claim).Text(); err != nil || got != "claimed" {
		t.Fatalf("claim: %q, %v", got, err)
	}
	last := domains[len(domains)-1]
	step := redisscripts.RecrawlClusterDomain{Ledger: cr.LedgerIn(l, last), Runs: l.LedgerRuns(cr.SpiderID, cr.AppID, cr.CrawlID, last),
		Kept: 100, Drop: []string{l.DupeFilter(cr.SpiderID, last, cr.CrawlID)}, Channel: rediskeys.QueueChannel(cr.SpiderID),
		N: 2, Stamp: ledger.Stamp(later), TTL: ttl}
	// 0: the monitor finished the start first (from the starting set), as well.
	if err := redisscripts.Eval(ctx, c, step).Err(); err != nil {
		t.Fatalf("the step in %s: %v", last, err)
	}
	// The monitor finishes the start: run 2 crawls the whole site and
	// completes once.
	checkRun(t, outbound, crawled, "cut", 2, want)
	if all, _ := outbound.where(completionOfRun("cut", 2)); len(all) != 1 {
		t.Errorf("run 2 completed %d times, want once", len(all))
	}
	if n := c.ZCard(ctx, l.RecrawlStarting()).Val(); n != 0 {
		t.Errorf("the starting set holds %d crawls, want none", n)
	}
	runs, err := ledger.RunsCluster(ctx, c, cr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Run != 1 || runs[0].Progress.Published != int64(len(want)) {
		t.Errorf("past runs %+v, want run 1 with %d published", runs, len(want))
	}
}

// A stop of a scheduled crawl on a Redis Cluster ends its schedule as on
// one Redis: the answer is out, info shows the schedule ended by the stop
// with no next run, and no later run starts (while a marker crawl runs
// twice, every 3 s).
func TestStopEndsTheScheduleOnARedisCluster(t *testing.T) {
	rc := harness.StartRedisCluster(t)
	k := harness.StartKafka(t, harness.KafkaOptions{NoAutoCreate: true})
	sites := startFreshSites(t, 3)
	env := clusterEnv(rc, k, map[string]string{"LEDGER_COMPLETE_QUIET": "0"})
	startComponents(t, env, "kafka-monitor", "crawler-1", "redis-monitor")
	outbound := readAll(t, k, "outbound_firehose")
	crawled := readAll(t, k, "crawled_firehose")
	feed(t, env, fmt.Sprintf(`{"url": %q, "appid": "e2e", "crawlid": "endless", "spiderid": "link", "maxdepth": 2, "recrawl": {"every": 3}}`,
		sites.url(0, "/")))
	outbound.first(t, "the crawl-complete of run 2", completionOfRun("endless", 2))
	feedLines(t, k, map[string]any{"action": "stop", "appid": "e2e", "crawlid": "endless", "uuid": "stop-endless", "spiderid": "link"})
	outbound.first(t, "the stop answer", uuid("stop-endless"))
	feedLines(t, k, map[string]any{"action": "info", "appid": "e2e", "crawlid": "endless", "uuid": "info-endless", "spiderid": "link"})
	info, _ := outbound.first(t, "the info answer", uuid("info-endless"))
	if field(info, "recrawl", "state") != "ended" || field(info, "recrawl", "ended_by") != "stop" || field(info, "recrawl", "next_run_at") != nil {
		t.Errorf("info recrawl after the stop %v, want ended by stop, next_run_at null", info["recrawl"])
	}
	started := num(info, "recrawl", "runs_started")
	feed(t, env, fmt.Sprintf(`{"url": %q, "appid": "e2e", "crawlid": "marker", "spiderid": "link", "maxdepth": 0, "recrawl": {"every": 3, "runs": 2}}`,
		sites.url(1, "/p/0")))
	outbound.first(t, "the marker's second run", completionOfRun("marker", 2))
	for n := started + 1; n <= started+2; n++ {
		if counts, _ := runResults(crawled, "endless", n); len(counts) > 0 {
			t.Errorf("run %d started after the stop: %v", n, counts)
		}
	}
}
