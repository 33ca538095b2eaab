package render_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/render"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// newPool is a pool whose browsers may reach 127.0.0.1 only (the test
// site), through a fetcher as the crawler's.
func newPool(t testing.TB, cfg render.Config) *render.Pool {
	t.Helper()
	browser, err := render.FindBrowser(os.Getenv("RENDER_BROWSER")) // "": the default search
	if err != nil {
		t.Fatal(err)
	}
	cfg.Browser = browser
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 2
	}
	if cfg.Recycle == 0 {
		cfg.Recycle = 100
		if n, err := strconv.Atoi(os.Getenv("RENDER_RECYCLE")); err == nil { // a benchmark without recycling
			cfg.Recycle = n
		}
	}
	f := fetch.New(fetch.Config{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	t.Cleanup(f.Close)
	p, err := render.New(cfg, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

var defaultSpec = crawlrequest.RenderSpec{Timeout: 60 * time.Second} // a loaded machine is slow

func TestRenderRunsTheScriptsAndBlocksResourceTypes(t *testing.T) {
	site := testsite.Start(t)
	p := newPool(t, render.Config{Block: render.DefaultBlock})
	res, err := p.Render(context.Background(), render.Request{URL: site.URL("/js/0"), UserAgent: "render-test/1", Spec: defaultSpec}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	body := string(res.Body)
	if !strings.Contains(body, testsite.ScriptElement(0)) || !strings.Contains(body, `href="/js/1"`) || !strings.Contains(body, `href="/js/2"`) {
		t.Errorf("the rendered body lacks the script's text or links:\n%s", body)
	}
	if res.Status != 200 || res.Header.Get("X-Script-Page") != "0" || res.URL != site.URL("/js/0") {
		t.Errorf("status %d, headers %v, URL %s", res.Status, res.Header, res.URL)
	}
	if hits := site.HitsFor("/js/0"); len(hits) != 1 || hits[0].UserAgent != "render-test/1" {
		t.Errorf("hits of the page: %+v", hits)
	}
	for _, asset := range []string{testsite.ScriptImage, testsite.ScriptMedia, testsite.ScriptFont} {
		if hits := site.HitsFor(asset); len(hits) != 0 {
			t.Errorf("%s was requested %d times, want never (blocked)", asset, len(hits))
		}
	}
	// Without blocking, the same page loads them.
	p2 := newPool(t, render.Config{})
	if _, err := p2.Render(context.Background(), render.Request{URL: site.URL("/js/0"), Spec: defaultSpec}, 1<<20); err != nil {
		t.Fatal(err)
	}
	if len(site.HitsFor(testsite.ScriptImage)) == 0 {
		t.Error("without RENDER_BLOCK the image was not requested: the check above proves nothing")
	}
}

func TestTheGuardRefusesWhatTheScriptsAndThePageAsk(t *testing.T) {
	site := testsite.Start(t)
	other := testsite.StartAt(t, "127.0.0.2:0")
	p := newPool(t, render.Config{})
	spec := crawlrequest.RenderSpec{WaitFor: "#fetched:not(:empty)", Timeout: 60 * time.Second}
	res, err := p.Render(context.Background(), render.Request{URL: site.URL("/js/0?fetch=" + other.URL("/secret")), Spec: spec}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(other.Hits()) != 0 {
		t.Errorf("the script reached 127.0.0.2: %+v", other.Hits())
	}
	// The script sees a failure (CORS hides the proxy's 403 from it).
	if !strings.Contains(string(res.Body), `<pre id="fetched">failed: `) || p.Metrics().Refused("private_address") < 1 {
		t.Errorf("refused %d; body:\n%s", p.Metrics().Refused("private_address"), res.Body)
	}
	_, err = p.Render(context.Background(), render.Request{URL: other.URL("/js/0"), Spec: defaultSpec}, 1<<20)
	if !errors.Is(err, fetch.ErrForbiddenAddress) || len(other.Hits()) != 0 {
		t.Errorf("a page on 127.0.0.2: %v, hits %d; want ErrForbiddenAddress and none", err, len(other.Hits()))
	}
	// A redirect there too.
	_, err = p.Render(context.Background(), render.Request{URL: site.URL("/redirect?to=" + other.URL("/js/0")), Spec: defaultSpec}, 1<<20)
	if !errors.Is(err, fetch.ErrForbiddenAddress) || len(other.Hits()) != 0 {
		t.Errorf("a redirect to 127.0.0.2: %v, hits %d; want ErrForbiddenAddress and none", err, len(other.Hits()))
	}
}

// A wait_for that never appears ends at the timeout, and the page is
// published as it is; the whole render stays within its timeout.
func TestWaitForThatNeverAppearsPublishesAtTheTimeout(t *testing.T) {
	site := testsite.Start(t)
	p := newPool(t, render.Config{})
	if _, err := p.Render(context.Background(), render.Request{URL: site.URL("/js/2"), Spec: defaultSpec}, 1<<20); err != nil {
		t.Fatal(err) // the browser started: the timeouts below are the pages'
	}
	start := time.Now()
	res, err := p.Render(context.Background(), render.Request{URL: site.URL("/js/3"),
		Spec: crawlrequest.RenderSpec{WaitFor: "#never", Timeout: 3 * time.Second}}, 1<<20)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Body), testsite.ScriptText(3)) || took < 2*time.Second || took > 4500*time.Millisecond {
		t.Errorf("took %v (timeout 3s); body:\n%s", took, res.Body)
	}
	// A page that never loads fails with ErrTimeout, within its timeout.
	_, err = p.Render(context.Background(), render.Request{URL: site.URL("/hang"), Spec: crawlrequest.RenderSpec{Timeout: 2 * time.Second}}, 1<<20)
	if !errors.Is(err, fetch.ErrTimeout) {
		t.Errorf("a hanging page: %v, want ErrTimeout", err)
	}
	if _, err := p.Render(context.Background(), render.Request{URL: site.URL("/js/4"), Spec: defaultSpec}, 1<<20); err != nil {
		t.Errorf("after a timeout the pool does not render: %v", err)
	}
}

func TestTheDOMIsCutAtMaxSize(t *testing.T) {
	site := testsite.Start(t)
	p := newPool(t, render.Config{})
	res, err := p.Render(context.Background(), render.Request{URL: site.URL("/js/0"), Spec: defaultSpec}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Body) != 100 || !res.Truncated {
		t.Errorf("body %d bytes, truncated %v", len(res.Body), res.Truncated)
	}
}

// A browser that dies costs the page it held; the next page gets a new
// browser. Browsers are replaced after Recycle pages.
func TestKilledBrowsersAreReplacedAndBrowsersRecycled(t *testing.T) {
	site := testsite.Start(t)
	p := newPool(t, render.Config{Concurrency: 1, Recycle: 2})
	r := render.Request{URL: site.URL("/js/0"), Spec: defaultSpec}
	for i := range 3 {
		if _, err := p.Render(context.Background(), r, 1<<20); err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
	}
	if n := counterValue(t, p, "scrapy_crawler_browser_restarts_total"); n != 1 {
		t.Errorf("restarts after 3 pages with RENDER_RECYCLE 2: %v, want 1", n)
	}
	for _, pid := range browserPids(t) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := p.Render(context.Background(), r, 1<<20)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no render after the browser was killed: %v", err)
		}
	}
	if s := p.State(); s.Browsers != 1 || s.PagesInUse != 0 {
		t.Errorf("state %+v", s)
	}
}

// browserPids are the Chromium main processes this test process started.
func browserPids(t *testing.T) []int {
	t.Helper()
	var pids []int
	for _, pid := range render.Descendants(os.Getpid()) {
		if render.IsBrowserMain(pid) {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		t.Fatal("no browser process found")
	}
	return pids
}

func counterValue(t *testing.T, p *render.Pool, name string) float64 {
	t.Helper()
	for _, c := range p.Metrics().Collectors() {
		ch := make(chan prometheus.Metric, 16)
		go func() { c.Collect(ch); close(ch) }()
		for m := range ch {
			if !strings.Contains(m.Desc().String(), `"`+name+`"`) {
				continue
			}
			var out dto.Metric
			if err := m.Write(&out); err != nil {
				t.Fatal(err)
			}
			if out.Counter != nil {
				return out.Counter.GetValue()
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// Pages share tabs (one at a time), and nothing a page leaves — cookies
// from its script or its server, local and session storage — reaches the
// next page in the same tab, whatever its crawl.
func TestAReusedTabKeepsNothingOfTheEarlierPage(t *testing.T) {
	site := testsite.Start(t)
	p := newPool(t, render.Config{Concurrency: 1, Block: render.DefaultBlock})
	render1 := func(path string) string {
		t.Helper()
		res, err := p.Render(context.Background(), render.Request{URL: site.URL(path), UserAgent: "wipe-test/1", Spec: defaultSpec}, 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return string(res.Body)
	}
	const nothing = `<pre id="remembered">cookie=;local=null;session=null</pre>`
	for i, word := range []string{"first", "second", "third"} {
		body := render1("/js/" + strconv.Itoa(i) + "?remember=" + word)
		if !strings.Contains(body, nothing) {
			t.Errorf("page %d found what an earlier page left:\n%s", i, body)
		}
		// The page could store: what the next one finds is not for want
		// of storing.
		if want := `<pre id="stored">cookie=remember=` + word + `;local=` + word + `;session=` + word + `</pre>`; !strings.Contains(body, want) {
			t.Errorf("page %d did not store its word (want %s):\n%s", i, want, body)
		}
		render1("/set-cookie?name=server" + strconv.Itoa(i) + "&value=" + word)
	}
	pages := 0
	for _, h := range site.Hits() {
		if strings.HasPrefix(h.Path, testsite.ScriptPrefix) || h.Path == "/set-cookie" {
			pages++
			if h.Cookie != "" {
				t.Errorf("%s?%s was sent the cookie %q", h.Path, h.Query, h.Cookie)
			}
		}
	}
	if pages != 6 {
		t.Errorf("%d pages fetched, want 6", pages)
	}
	if n := counterValue(t, p, "scrapy_crawler_render_tabs_opened_total"); n != 1 {
		t.Errorf("tabs opened for 6 pages one at a time: %v, want 1 (reused)", n)
	}
}

// Pages of one session (a crawl) rendered one after another in a tab find
// what the earlier ones left, as in one browser session; a page of another
// session, or of none, finds nothing of them, and after it neither does the
// first session's next page (the tab was wiped between).
func TestPagesOfOneSessionShareATabAndOtherSessionsFindItWiped(t *testing.T) {
	site := testsite.Start(t)
	p := newPool(t, render.Config{Concurrency: 1, Block: render.DefaultBlock})
	const nothing = "cookie=;local=null;session=null"
	for i, step := range []struct{ session, word, finds string }{
		{"a", "a1", nothing},
		{"a", "a2", "cookie=remember=a1;local=a1;session=a1"},
		{"b", "b1", nothing},
		{"a", "a3", nothing},
		{"", "none1", nothing},
		{"", "none2", nothing},
		{"a", "a4", nothing},
		{"b", "b2", nothing},
	} {
		res, err := p.Render(context.Background(), render.Request{URL: site.URL("/js/" + strconv.Itoa(i) + "?remember=" + step.word),
			Spec: defaultSpec, Session: step.session}, 1<<20)
		if err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
		if want := `<pre id="remembered">` + step.finds + `</pre>`; !strings.Contains(string(res.Body), want) {
			t.Errorf("page %d (session %q) want %s in:\n%s", i, step.session, want, res.Body)
		}
	}
	if n := counterValue(t, p, "scrapy_crawler_render_tabs_opened_total"); n != 1 {
		t.Errorf("tabs opened for 8 pages one at a time: %v, want 1 (reused)", n)
	}
}
