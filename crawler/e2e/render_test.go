package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/render"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// Rendering crawlers reach the test site on 127.0.0.1 and nothing else of
// the loopback network: 127.0.0.2 is "another internal address".
// The crawler's environment holds only its settings (no PATH): its browser
// is RENDER_BROWSER, found here as the crawler finds it by default.
var renderEnv = map[string]string{"RENDER_ENABLED": "true", "FETCH_ALLOWED_NETWORKS": "127.0.0.1/32", "FETCH_BLOCK_PRIVATE": "true",
	"RENDER_BROWSER": browserPath()}

func browserPath() string {
	p, err := render.FindBrowser("")
	if err != nil {
		return "chromium" // the crawler says what is missing
	}
	return p
}

// renderCrawl is a crawl request with render true.
func renderCrawl(tb testing.TB, url, crawlID string, maxDepth int) *crawlrequest.Request {
	tb.Helper()
	r := crawl("link", url, crawlID, maxDepth)
	if err := r.SetExtra(crawlrequest.FieldRender, json.RawMessage(`{"timeout":60}`)); err != nil {
		tb.Fatal(err)
	}
	return r
}

// scriptTree is the script pages a crawl from /js/<n> reaches at maxDepth.
func scriptTree(site *testsite.Site, n, maxDepth int) map[string]int {
	out := map[string]int{site.URL(testsite.ScriptPrefix + strconv.Itoa(n)): n}
	level := []int{n}
	for range maxDepth {
		var next []int
		for _, m := range level {
			for _, l := range testsite.ScriptLinks(m) {
				k, _ := strconv.Atoi(strings.TrimPrefix(l, testsite.ScriptPrefix))
				out[site.URL(l)] = k
				next = append(next, k)
			}
		}
		level = next
	}
	return out
}

// rawResults reads results until every url of want has one of crawlID, and
// returns the results of crawlID by url, as JSON objects (with the fields
// spider.Page does not know, "rendered").
func (c *cluster) rawResults(tb testing.TB, crawlID string, want []string, timeout time.Duration) map[string][]map[string]any {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out := map[string][]map[string]any{}
	missing := func() []string {
		var m []string
		for _, u := range want {
			if len(out[u]) == 0 {
				m = append(m, u)
			}
		}
		return m
	}
	for len(missing()) > 0 {
		msg, err := c.firehose(tb).ReadMessage(ctx)
		if err != nil {
			tb.Fatalf("waiting for the results of %s: %v; missing %v", crawlID, err, missing())
		}
		var m map[string]any
		var page spider.Page
		if json.Unmarshal(msg.Value, &m) != nil || json.Unmarshal(msg.Value, &page) != nil {
			tb.Fatalf("not a crawl result: %.300s", msg.Value)
		}
		c.read = append(c.read, &page)
		if m["crawlid"] == crawlID {
			out[page.URL] = append(out[page.URL], m)
		}
	}
	return out
}

// linkURLs are a result's link URLs, sorted.
func linkURLs(m map[string]any) []string {
	var out []string
	links, _ := m["links"].([]any)
	for _, l := range links {
		if lm, ok := l.(map[string]any); ok {
			out = append(out, fmt.Sprint(lm["url"]))
		}
	}
	slices.Sort(out)
	return out
}

func TestRenderRequestsWaitForARenderingCrawlerAndFindTheScriptLinks(t *testing.T) {
	c := newCluster(t)
	site := testsite.Start(t)
	plain := c.startCrawler(t, "plain", map[string]string{"FETCH_ALLOWED_NETWORKS": "127.0.0.1/32"})
	// Queued first, the render crawl waits while the plain one is crawled.
	c.seed(t, renderCrawl(t, site.URL("/js/3"), "rendered", 2))
	c.seed(t, crawl("link", site.URL("/js/0"), "plain", 2))
	plainResults := c.rawResults(t, "plain", []string{site.URL("/js/0")}, 60*time.Second)
	for _, m := range plainResults[site.URL("/js/0")] {
		if links := linkURLs(m); len(links) != 0 || m[render.ResultField] != nil || strings.Contains(fmt.Sprint(m["body"]), testsite.ScriptText(0)) {
			t.Errorf("a plain crawl of a script page: links %v, rendered %v", links, m[render.ResultField])
		}
	}
	renderQueue := rediskeys.RenderQueueKey("link", "127.0.0.1.")
	if n, err := c.rdb.ZCard(context.Background(), renderQueue).Result(); err != nil || n != 1 {
		t.Fatalf("%s holds %d requests (%v) while only a plain crawler runs, want the seed", renderQueue, n, err)
	}
	if hits := site.HitsFor("/js/3"); len(hits) != 0 {
		t.Fatalf("the render seed was fetched %d times by a plain crawler", len(hits))
	}
	if strings.Contains(plain.out.String(), "render queue") {
		t.Errorf("the plain crawler touched a render request:\n%s", tail(plain.out.String(), 20))
	}

	c.startCrawler(t, "rendering", renderEnv)
	tree := scriptTree(site, 3, 2)
	results := c.rawResults(t, "rendered", keysOf(tree), 180*time.Second)
	c.drained(t, 60*time.Second, "link")
	for u, n := range tree {
		for _, m := range results[u] {
			var want []string // the script's links; none past maxdepth (as the link spider reports them)
			for _, l := range testsite.ScriptLinks(n) {
				if _, inTree := tree[site.URL(l)]; inTree {
					want = append(want, site.URL(l))
				}
			}
			slices.Sort(want)
			if m[render.ResultField] != true || !strings.Contains(fmt.Sprint(m["body"]), testsite.ScriptElement(n)) ||
				!slices.Equal(linkURLs(m), want) || m["status_code"] != float64(200) {
				t.Errorf("%s: rendered %v, links %v (want %v), status %v, body has the script's text: %v", u, m[render.ResultField],
					linkURLs(m), want, m["status_code"], strings.Contains(fmt.Sprint(m["body"]), testsite.ScriptElement(n)))
			}
		}
	}
	for u := range results {
		if _, ok := tree[u]; !ok {
			t.Errorf("crawled %s, not a script link of the tree", u)
		}
	}
	for _, asset := range []string{testsite.ScriptImage, testsite.ScriptMedia, testsite.ScriptFont} {
		if hits := site.HitsFor(asset); len(hits) != 0 {
			t.Errorf("%s (blocked by RENDER_BLOCK's default) was requested %d times", asset, len(hits))
		}
	}
}

func keysOf(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A script that asks for another loopback address, and a page there, are
// refused: the other site sees nothing, the page is refused:private_address.
func TestRenderingPassesEveryRequestThroughTheGuard(t *testing.T) {
	c := newCluster(t)
	site := testsite.Start(t)
	other := testsite.StartAt(t, "127.0.0.2:0")
	cr := c.startCrawler(t, "rendering", renderEnv)
	seed := site.URL("/js/0?fetch=" + other.URL("/secret"))
	c.seed(t, renderCrawl(t, seed, "guard", 0), renderCrawl(t, other.URL("/js/0"), "guard-page", 0))
	results := c.rawResults(t, "guard", []string{seed}, 180*time.Second)
	c.drained(t, 60*time.Second, "link")
	if len(other.Hits()) != 0 {
		t.Errorf("127.0.0.2 was reached: %+v", other.Hits())
	}
	for _, m := range results[seed] {
		if strings.Contains(fmt.Sprint(m["body"]), `<pre id="fetched">got: `) {
			t.Errorf("the script got an answer from 127.0.0.2:\n%v", m["body"])
		}
	}
	if p := fields(c.progress(t, "link", "guard-page")); p["refused:private_address"] != 1 {
		t.Errorf("the ledger of the page on 127.0.0.2: %v, want refused:private_address 1", p)
	}
	// The script's request is counted (the page's own is refused before
	// the browser sees it).
	metrics := scrapeMetrics(t, cr)
	if !strings.Contains(metrics, `scrapy_crawler_render_refused_total{reason="private_address",spider="link"} `) ||
		strings.Contains(metrics, `scrapy_crawler_render_refused_total{reason="private_address",spider="link"} 0`) {
		t.Errorf("no refusal counted:\n%s", grepLines(metrics, "scrapy_crawler_render"))
	}
}

// scrapeMetrics reads a crawler's /metrics, at the admin address it logged.
func scrapeMetrics(tb testing.TB, cr *crawler) string {
	tb.Helper()
	m := regexp.MustCompile(`"Serving /metrics[^\n]*"address": "([^"]+)"`).FindStringSubmatch(cr.out.String())
	if m == nil {
		tb.Fatalf("the crawler logged no admin address:\n%s", tail(cr.out.String(), 10))
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// chromiumOf are the Chromium processes below pid, by pid.
func chromiumOf(pid int) []int {
	var out []int
	for _, p := range render.Descendants(pid) {
		if cmd, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline"); err == nil && strings.Contains(string(cmd), "chrom") {
			out = append(out, p)
		}
	}
	return out
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(string(stat[i+1:])), "Z")
}

// profilesOf are the --user-data-dir values of processes.
func profilesOf(pids []int) []string {
	var out []string
	for _, p := range pids {
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		for _, arg := range strings.Split(string(cmd), "\x00") {
			if d, ok := strings.CutPrefix(arg, "--user-data-dir="); ok && !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

func TestKillingTheBrowserMidCrawlLosesNoPage(t *testing.T) {
	c := newCluster(t)
	site := testsite.Start(t)
	cr := c.startCrawler(t, "rendering", with(renderEnv, "RENDER_CONCURRENCY", "2"))
	tree := scriptTree(site, 0, 3)
	c.seed(t, renderCrawl(t, site.URL("/js/0"), "killed", 3))
	c.rawResults(t, "killed", []string{site.URL("/js/0")}, 180*time.Second)
	var killed int
	for _, p := range chromiumOf(cr.pid()) {
		if render.IsBrowserMain(p) {
			_ = syscall.Kill(p, syscall.SIGKILL)
			killed++
		}
	}
	if killed == 0 {
		t.Fatal("no browser of the crawler found to kill")
	}
	rest := slices.DeleteFunc(keysOf(tree), func(u string) bool { return u == site.URL("/js/0") }) // read above
	c.rawResults(t, "killed", rest, 240*time.Second)
	c.drained(t, 60*time.Second, "link")
	if cr.exited() {
		t.Fatalf("the crawler died with its browser: %v", cr.Wait())
	}
}

func TestNoChromiumOutlivesItsCrawler(t *testing.T) {
	for _, how := range []string{"SIGTERM", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			c := newCluster(t)
			site := testsite.Start(t)
			cr := c.startCrawler(t, "rendering", renderEnv)
			c.seed(t, renderCrawl(t, site.URL("/js/0"), "procs", 0))
			c.rawResults(t, "procs", []string{site.URL("/js/0")}, 180*time.Second)
			procs := chromiumOf(cr.pid())
			profiles := profilesOf(procs)
			if len(procs) == 0 || len(profiles) == 0 {
				t.Fatalf("no Chromium process (%v) or profile (%v) of the crawler found", procs, profiles)
			}
			if how == "SIGTERM" {
				if err := cr.stop(30 * time.Second); err != nil {
					t.Fatal(err)
				}
			} else {
				cr.kill()
			}
			harness.WaitFor(t, "the crawler's Chromium processes to end", 10*time.Second, func() bool {
				return !slices.ContainsFunc(procs, alive)
			})
			if how == "SIGTERM" {
				for _, d := range profiles {
					if _, err := os.Stat(d); !os.IsNotExist(err) {
						t.Errorf("the browser profile %s is still there (%v)", d, err)
					}
				}
			}
		})
	}
}

// Pages of two crawls rendered in one tab (RENDER_CONCURRENCY 1) never see
// each other's cookies or storage: a tab goes unwiped only from a page of a
// crawl to another page of the same crawl.
func TestRenderedCrawlsDoNotSeeEachOthersCookiesOrStorage(t *testing.T) {
	c := newCluster(t)
	site := testsite.Start(t)
	c.startCrawler(t, "rendering", with(renderEnv, "RENDER_CONCURRENCY", "1"))
	pages := map[string]string{ // url: its crawl
		site.URL("/js/0?remember=crawl-a"): "isolation-a", site.URL("/js/1?remember=crawl-b"): "isolation-b",
		site.URL("/js/2?remember=crawl-a"): "isolation-a", site.URL("/js/3?remember=crawl-b"): "isolation-b",
	}
	var seeds []*crawlrequest.Request
	for u, crawlID := range pages {
		seeds = append(seeds, renderCrawl(t, u, crawlID, 0))
	}
	c.seed(t, seeds...)
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	for seen := map[string]bool{}; len(seen) < len(pages); {
		msg, err := c.firehose(t).ReadMessage(ctx)
		if err != nil {
			t.Fatalf("after %d of %d pages: %v", len(seen), len(pages), err)
		}
		var m map[string]any
		if err := json.Unmarshal(msg.Value, &m); err != nil {
			t.Fatal(err)
		}
		u, _ := m["url"].(string)
		crawlID, ok := pages[u]
		if !ok || m["crawlid"] != crawlID || seen[u] {
			continue
		}
		seen[u] = true
		word := strings.TrimPrefix(crawlID, "isolation-")
		other := map[string]string{"a": "crawl-b", "b": "crawl-a"}[word]
		body := fmt.Sprint(m["body"])
		if want := `<pre id="stored">cookie=remember=crawl-` + word; !strings.Contains(body, want) {
			t.Errorf("%s did not store its word (want %s):\n%s", u, want, body)
		}
		if i := strings.Index(body, `<pre id="remembered">`); i < 0 || strings.Contains(body[i:i+100], other) {
			t.Errorf("%s (crawl %s) found what the other crawl left:\n%s", u, crawlID, body)
		}
	}
}

// A rendered page starts in a clean tab, as in a context of its own, even
// after a page of its own crawl; a crawl that asks for a session
// ("session": true) keeps its tab's state from one page to the next, as in
// one browser session.
func TestRenderedPagesShareATabOnlyInACrawlWithASession(t *testing.T) {
	c := newCluster(t)
	site := testsite.Start(t)
	c.startCrawler(t, "rendering", with(renderEnv, "RENDER_CONCURRENCY", "1"))
	const nothing = `<pre id="remembered">cookie=;local=null;session=null</pre>`
	remembered := func(crawlID string, session bool, words ...string) map[string]string {
		t.Helper()
		pages := map[string]string{} // url: the word it leaves
		var seeds []*crawlrequest.Request
		for i, word := range words {
			u := site.URL("/js/" + strconv.Itoa(i) + "?remember=" + word)
			pages[u] = word
			r := renderCrawl(t, u, crawlID, 0)
			if session {
				if err := r.SetExtra(crawlrequest.FieldSession, json.RawMessage(`true`)); err != nil {
					t.Fatal(err)
				}
			}
			seeds = append(seeds, r)
		}
		c.seed(t, seeds...)
		found := map[string]string{} // word: what its page found
		ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
		defer cancel()
		for len(found) < len(pages) {
			msg, err := c.firehose(t).ReadMessage(ctx)
			if err != nil {
				t.Fatalf("crawl %s, after %d of %d pages: %v", crawlID, len(found), len(pages), err)
			}
			var m map[string]any
			if err := json.Unmarshal(msg.Value, &m); err != nil {
				t.Fatal(err)
			}
			word, ok := pages[fmt.Sprint(m["url"])]
			if !ok || m["crawlid"] != crawlID {
				continue
			}
			body := fmt.Sprint(m["body"])
			i := strings.Index(body, `<pre id="remembered">`)
			j := strings.Index(body, `<pre id="stored">`)
			if i < 0 || j < i {
				t.Fatalf("%s: no remembered and stored state in its body:\n%s", word, body)
			}
			found[word] = body[i:j]
		}
		return found
	}

	for word, state := range remembered("clean-tabs", false, "plain-1", "plain-2") {
		if state != nothing {
			t.Errorf("a page of a crawl without a session (%s) found an earlier page's state: %s", word, state)
		}
	}
	kept := remembered("one-session", true, "kept-1", "kept-2")
	clean, other := 0, 0
	for word, state := range kept {
		switch {
		case state == nothing:
			clean++
		case strings.Contains(state, "cookie=remember=kept-") && !strings.Contains(state, word) && !strings.Contains(state, "plain-"):
			other++
		default:
			t.Errorf("a page of the session crawl (%s) found %s", word, state)
		}
	}
	if clean != 1 || other != 1 {
		t.Fatalf("in the session crawl, want the first page to find a clean tab and the second the first's state: %v", kept)
	}
}
