package console_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// chromiumFor starts a browser test: it skips the test with -short (why
// says what it starts) and returns the Chromium to run, Debian's chromium
// or $CHROMIUM.
func chromiumFor(t *testing.T, why string) string {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	return harness.Tool(t, path, "chromium")
}

// browser is one headless Chromium tab, with every JavaScript console
// error, uncaught exception and browser log error it reports.
type browser struct {
	t    *testing.T
	ctx  context.Context
	mu   sync.Mutex
	errs []string
}

func newBrowser(t *testing.T, path string) *browser {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("enable the browser log: %v", err)
	}
	go func() {
		for ev, err := range chromedp.Events(ctx, runtime.ConsoleAPICalled) {
			if err != nil {
				return
			}
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				b.report("console." + string(ev.Type) + ": " + strings.Join(args, " "))
			}
		}
	}()
	go func() {
		for ev, err := range chromedp.Events(ctx, runtime.ExceptionThrown) {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			desc := d.Text
			if d.Exception != nil {
				desc += " " + d.Exception.Description
			}
			b.report(fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber, desc))
		}
	}()
	go func() {
		for ev, err := range chromedp.Events(ctx, log.EntryAdded) {
			if err != nil {
				return
			}
			if e := ev.Entry; e.Level == log.EntryLevelError || e.Level == log.EntryLevelWarning {
				b.report(fmt.Sprintf("browser log %s (%s) %s: %s", e.Level, e.Source, e.URL, e.Text))
			}
		}
	}()
	// The Stop button asks for confirmation; accept it as an operator would.
	go func() {
		for _, err := range chromedp.Events(ctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return b
}

func (b *browser) report(msg string) {
	b.mu.Lock()
	b.errs = append(b.errs, msg)
	b.mu.Unlock()
}

// noErrors fails the test with every console error reported since the last call.
func (b *browser) noErrors(where string) {
	b.t.Helper()
	b.mu.Lock()
	errs := b.errs
	b.errs = nil
	b.mu.Unlock()
	for _, e := range errs {
		b.t.Errorf("%s: %s", where, e)
	}
}

// do runs actions, failing the test on error.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// press clicks the button sel and waits for the answer (#flash). The
// page's content is replaced every UI_REFRESH seconds: a click that found
// the button gone from the page (before any mouse event) is tried again.
func (b *browser) press(what, sel string) {
	b.t.Helper()
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
		err := chromedp.Do(ctx, chromedp.Click(chromedp.ID(sel)), chromedp.WaitVisible(chromedp.ID(`#flash`)))
		cancel()
		if err == nil {
			return
		}
		if attempt == 3 || !strings.Contains(err.Error(), "Could not find node") {
			b.t.Fatalf("%s: %v", what, err)
		}
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS polls a JavaScript expression until it is true.
func (b *browser) waitJS(what, expr string, timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for !eval[bool](b, "!!("+expr+")") {
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out after %s waiting for %s (%s)", timeout, what, expr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// text is the text of the first element sel matches ("" when none).
func (b *browser) text(sel string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel))
}

// screenshot writes the page as name.png in dir.
func (b *browser) screenshot(dir, name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// screenshotDir is $CONSOLE_SCREENSHOTS, or a folder in the temporary
// directory that each run overwrites.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("CONSOLE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "scrapy-cluster-console-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("console screenshots in %s", dir)
	return dir
}

// The console, driven in a real headless Chromium against a whole cluster
// on loopback: every page loads without a JavaScript error; a domain's
// throttle changed on the Domains page shows there and reaches the
// crawler; a crawl submitted through the form (after one the validation
// refused, with the errors beside their fields) shows its results on the
// Live page and its crawl page; a throttled crawl is stopped with its
// button and its queued requests are purged; another gets an expiry with
// the Expire button and is purged when it passes; the Crawls page and the
// API console show what the cluster holds.
func TestConsoleInABrowser(t *testing.T) {
	chromium := chromiumFor(t, "starts a whole cluster and a browser")
	c := newCluster(t)
	b := newBrowser(t, chromium)
	shots := screenshotDir(t)
	ui := c.restURL + "/ui/"
	const appID = "consoletest"

	// A crawl through the API before the console's first use: its results
	// are on the firehose before the console reads it, and it reads them back.
	before := c.crawlBefore(appID, "before1")

	// Overview: every component alive.
	b.do("open the overview", chromedp.Navigate(ui), chromedp.WaitVisible(chromedp.CSS(`.cards`)))
	b.waitJS("the overview to show one of each component",
		`["Kafka Monitors", "Redis Monitors", "REST services", "Crawlers"].every(n =>
			(document.querySelector('[data-component="' + n + '"] .big') || {}).textContent === "1")`, 40*time.Second)
	// No card alone on a row, and the chart's caption in words.
	if alone := eval[bool](b, `(() => {
		const rows = {};
		for (const c of document.querySelectorAll(".cards .card")) rows[c.offsetTop] = (rows[c.offsetTop] || 0) + 1;
		const counts = Object.values(rows);
		return counts.length > 1 && counts.some(n => n === 1) })()`); alone {
		t.Error("an Overview card is alone on its row")
	}
	if got := b.text("#chart-caption"); got == "" || strings.Contains(got, "stats:") {
		t.Errorf("the chart's caption %q, want it in words, without Redis keys", got)
	}
	b.noErrors("overview")

	// Live, on first use: the results published before it, read back from the topic.
	b.do("open the live page of before1", chromedp.Navigate(ui+"live?crawlid=before1"), chromedp.WaitVisible(chromedp.ID(`#live`)))
	b.waitJS("every result of before1 read back", fmt.Sprintf(`document.querySelectorAll('#live-rows tr[data-crawlid="before1"]').length === %d`, before), 30*time.Second)
	b.noErrors("live, read back")

	// Domains: throttle site2's domain to one request per two minutes.
	b.do("open the domains page", chromedp.Navigate(ui+"domains"), chromedp.WaitVisible(chromedp.CSS(`#throttle-form`)))
	b.do("fill in the throttle",
		chromedp.SetValue(chromedp.CSS(`#throttle-form input[name=domain]`), "127.0.0.2."),
		chromedp.SetValue(chromedp.CSS(`#throttle-form input[name=hits]`), "1"),
		chromedp.SetValue(chromedp.CSS(`#throttle-form input[name=window]`), "120"),
		chromedp.SetValue(chromedp.CSS(`#throttle-form input[name=scale]`), "1.0"),
		chromedp.Click(chromedp.CSS(`#throttle-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`#flash`)))
	if f := b.text("#flash"); !strings.Contains(f, "domain-update 127.0.0.2.") || !strings.Contains(f, "Sent.") {
		t.Fatalf("the throttle change was not accepted: %s", f)
	}
	b.waitJS("the new throttle on the Domains page", `(document.querySelector('tr[data-domain="127.0.0.2."] .throttle') || {}).textContent === "1 hits / 120 s"`, 5*time.Second)
	harness.WaitFor(t, "the crawler to apply the throttle", 30*time.Second, func() bool { return c.crawlerKnowsDomains(1) })
	b.screenshot(shots, "console-domains")
	b.noErrors("domains")

	// Submit: the validation's objections beside their fields, then a crawl.
	b.do("open the submit form", chromedp.Navigate(ui+"submit"), chromedp.WaitVisible(chromedp.CSS(`#submit-form`)))
	b.do("submit an invalid crawl",
		chromedp.SetValue(chromedp.ID(`#f-url`), "ftp://example.com/"),
		chromedp.SetValue(chromedp.ID(`#f-appid`), "ab"),
		chromedp.SetValue(chromedp.ID(`#f-crawlid`), "done1"),
		chromedp.SetValue(chromedp.ID(`#f-priority`), "high"),
		chromedp.SetValue(chromedp.ID(`#f-maxdepth`), "9"),
		chromedp.SetValue(chromedp.ID(`#f-allow_regex`), "("),
		chromedp.Click(chromedp.ID(`#submit`)),
		chromedp.WaitVisible(chromedp.ID(`#form-errors`)))
	// Every error at once, each beside its field.
	for field, want := range map[string]string{"priority": "want integer", "maxdepth": "maximum", "appid": "minLength",
		"url": `scheme "ftp" not allowed`, "allow_regex": "allow_regex[0]"} {
		if got := b.text(`[data-field="` + field + `"] .field-error`); !strings.Contains(got, want) {
			t.Errorf("the error beside %s is %q, want one saying %q", field, got, want)
		}
	}
	if got := b.text(`[data-field="crawlid"] .field-error`); got != "" {
		t.Errorf("the valid crawlid has an error beside it: %q", got)
	}
	b.screenshot(shots, "console-submit")
	eval[bool](b, `(document.getElementById("f-allow_regex").value = "") === ""`)
	b.do("submit the crawl",
		chromedp.SetValue(chromedp.ID(`#f-url`), c.site1),
		chromedp.SetValue(chromedp.ID(`#f-appid`), appID),
		chromedp.SetValue(chromedp.ID(`#f-priority`), "5"),
		chromedp.SetValue(chromedp.ID(`#f-maxdepth`), "1"),
		chromedp.SetValue(chromedp.ID(`#f-attrs`), `{"team": "console"}`),
		chromedp.Click(chromedp.ID(`#submit`)),
		chromedp.WaitVisible(chromedp.ID(`#sent`)))
	b.noErrors("submit")

	// Live: the crawl's results as they arrive.
	b.do("open the live page", chromedp.Navigate(ui+"live?appid="+appID), chromedp.WaitVisible(chromedp.ID(`#live`)))
	b.waitJS("the stream to connect", `document.getElementById("live-conn").textContent === "connected"`, 10*time.Second)
	b.waitJS("results of done1 on the Live page",
		`document.querySelectorAll('#live-rows tr[data-crawlid="done1"]').length >= 3`, 60*time.Second)
	b.waitJS("the status line to show the reading", `document.getElementById("live-state").textContent.startsWith("reading")
		&& Number(document.getElementById("live-read").textContent) >= 3`, 10*time.Second)
	if got := b.text(`#live-rows tr[data-crawlid="done1"] .status`); got != "200" {
		t.Errorf("a live result's status is %q, want 200", got)
	}
	checkNewestFirst(b, "#live-rows tr")
	b.screenshot(shots, "console-live")
	b.noErrors("live")

	// The crawl's own page: its ledger and its latest results.
	done1 := ledger.Crawl{SpiderID: "link", AppID: appID, CrawlID: "done1"}
	b.do("open the crawl page", chromedp.Navigate(ui+"crawl?spiderid=link&appid="+appID+"&crawlid=done1"),
		chromedp.WaitVisible(chromedp.CSS(`.results`)))
	b.waitJS("done1's results on its page", `document.querySelectorAll('.results tr[data-seq]').length >= 3`, 10*time.Second)
	b.waitJS("done1's progress bar to reach complete", `(() => {
		const p = document.getElementById("crawl-progress");
		return document.getElementById("crawl-state").textContent === "complete" && p && p.max > 0 && p.value === p.max })()`, 90*time.Second)
	if p, err := ledger.Read(context.Background(), c.rdb, done1); err != nil || p[0] == nil || p[0].State != ledger.StateComplete || p[0].Published == 0 {
		t.Fatalf("the page shows done1 complete, the ledger: %+v (%v)", p, err)
	}
	checkNewestFirst(b, ".results tr[data-seq]")
	// A complete crawl offers no Stop and no Expire.
	b.waitJS("the page to offer no action on the complete crawl", `document.getElementById("no-actions") && !document.getElementById("stop") && !document.getElementById("expire")`, 10*time.Second)
	b.screenshot(shots, "console-crawl")
	b.noErrors("crawl page")

	// Stop: a crawl of the throttled site keeps requests queued; Stop purges them.
	stopped := c.submitThrottled(b, ui, appID, "stop1")
	b.press("stop the crawl", `#stop`)
	if f := b.text("#flash"); !strings.Contains(f, `"total_purged"`) || !strings.Contains(f, `"action": "stop"`) {
		t.Fatalf("the stop's answer is not shown: %s", f)
	}
	if st := b.text("#crawl-state"); st != "ending" && st != "complete" {
		t.Errorf("right after Stop the crawl shows %q (%s), want ending or complete", st, b.text("#crawl-ended-by"))
	}
	b.waitJS("stop1's queue to be empty on its page", `document.getElementById("queued-total").textContent === "0"`, 15*time.Second)
	if n := c.queuedFor(stopped); n != 0 {
		t.Errorf("%d requests of stop1 still queued after Stop", n)
	}
	b.noErrors("stop")

	// Expire: another throttled crawl gets an expiry of now, and is purged.
	expired := c.submitThrottled(b, ui, appID, "expire1")
	if got := eval[string](b, `document.querySelector('form.expire input[name=url]').value`); !strings.HasPrefix(got, c.site2) {
		t.Errorf("the Expire form's URL is %q, want one of the crawl's (%s...)", got, c.site2)
	}
	b.press("expire the crawl", `#expire`)
	if f := b.text("#flash"); !strings.Contains(f, "Sent: the crawl expires at") {
		t.Fatalf("the expire was not sent: %s", f)
	}
	harness.WaitFor(t, "the Redis Monitor to purge expire1", 30*time.Second, func() bool { return c.queuedFor(expired) == 0 })
	b.noErrors("expire")

	// Crawls: what the ledger holds.
	b.do("open the crawls page", chromedp.Navigate(ui+"crawls?appid="+appID), chromedp.WaitVisible(chromedp.ID(`#crawls`)))
	entries, total, err := ledger.List(context.Background(), c.rdb, appID, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.text("#crawls-total"); got != fmt.Sprint(total) {
		t.Errorf("the Crawls page counts %s crawls, the ledger %d", got, total)
	}
	if rows := eval[int](b, `document.querySelectorAll('#crawls tr[data-crawlid]').length`); rows != len(entries) {
		t.Errorf("the Crawls page lists %d crawls, the ledger %d", rows, len(entries))
	}
	b.waitJS("done1 complete in the list", `(document.querySelector('#crawls tr[data-crawlid="done1"]') || {dataset: {}}).dataset.state === "complete"`, 30*time.Second)
	b.screenshot(shots, "console-crawls")
	b.noErrors("crawls")

	// API console: a stats request and its answer.
	b.do("open the API console", chromedp.Navigate(ui+"api"), chromedp.WaitVisible(chromedp.ID(`#api-form`)))
	b.do("send a stats request", chromedp.Click(chromedp.ID(`#api-send`)), chromedp.WaitVisible(chromedp.CSS(`#api-answers .answer`)))
	if got := b.text("#api-answers .answer"); !strings.Contains(got, "POST /feed → 200") || !strings.Contains(got, `"status": "SUCCESS"`) || !strings.Contains(got, `"kafka-monitor"`) {
		t.Errorf("the API console's answer: %s", got)
	}
	// A long answer is folded: its first lines, the whole on demand.
	b.do("send an info request", chromedp.SetValue(chromedp.ID(`#api-body`), fmt.Sprintf(
		`{"action": "info", "appid": %q, "uuid": "info-long", "spiderid": "link"}`, appID)),
		chromedp.Click(chromedp.ID(`#api-send`)),
		chromedp.WaitVisible(chromedp.CSS(`#api-answers .answer:nth-child(2)`)))
	b.waitJS("the long answer folded", `(() => {
		const a = document.querySelector("#api-answers .answer"), pre = a.querySelector("pre.preview"), more = a.querySelector("details");
		return pre && more && pre.textContent.split("\n").length <= 21 && more.querySelector("pre").textContent.split("\n").length > 40 })()`, 30*time.Second)
	b.screenshot(shots, "console-api")
	b.noErrors("api console")

	// Overview again, with the crawls' responses in its chart.
	b.do("open the overview", chromedp.Navigate(ui), chromedp.WaitVisible(chromedp.CSS(`.chart`)))
	b.waitJS("a bar in the chart", `[...document.querySelectorAll(".chart .bar")].some(r => Number(r.getAttribute("height")) > 0)`, 10*time.Second)
	b.screenshot(shots, "console-overview")
	b.noErrors("overview")
}

// checkNewestFirst checks that the results rows sel matches are in time
// order, newest first.
func checkNewestFirst(b *browser, sel string) {
	b.t.Helper()
	times := eval[[]string](b, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(r => r.cells[0].textContent)`, sel))
	if len(times) < 2 {
		b.t.Errorf("%d rows of %s, too few to tell their order", len(times), sel)
	}
	for i := 1; i < len(times); i++ {
		if times[i] > times[i-1] {
			b.t.Errorf("%s: %s listed below %s, want newest first", sel, times[i], times[i-1])
		}
	}
}

// crawlBefore feeds a crawl of site1 through the REST API (not the
// console) and waits until its pages are published; it returns how many.
func (c *cluster) crawlBefore(appID, crawlID string) int {
	c.tb.Helper()
	body := fmt.Sprintf(`{"url": %q, "appid": %q, "crawlid": %q, "maxdepth": 1}`, c.site1, appID, crawlID)
	resp, err := http.Post(c.restURL+"/feed", "application/json", strings.NewReader(body))
	if err != nil {
		c.tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.tb.Fatalf("POST /feed %s: %s", body, resp.Status)
	}
	cr := ledger.Crawl{SpiderID: "link", AppID: appID, CrawlID: crawlID}
	var published int64
	harness.WaitFor(c.tb, crawlID+"'s pages published", 60*time.Second, func() bool {
		p, err := c.progress(cr)
		if err != nil || p == nil {
			return false
		}
		published = p.Published
		return published > 2 && p.Outstanding() == 0
	})
	return int(published)
}

// submitThrottled submits a crawl of site2 (throttled to one request per two
// minutes) through the form and opens its page once its follow-ups wait in
// the queue.
func (c *cluster) submitThrottled(b *browser, ui, appID, crawlID string) ledger.Crawl {
	b.t.Helper()
	b.do("open the submit form", chromedp.Navigate(ui+"submit"), chromedp.WaitVisible(chromedp.CSS(`#submit-form`)))
	b.do("submit "+crawlID,
		chromedp.SetValue(chromedp.ID(`#f-url`), c.site2),
		chromedp.SetValue(chromedp.ID(`#f-appid`), appID),
		chromedp.SetValue(chromedp.ID(`#f-crawlid`), crawlID),
		chromedp.SetValue(chromedp.ID(`#f-maxdepth`), "2"),
		chromedp.Click(chromedp.ID(`#submit`)),
		chromedp.WaitVisible(chromedp.ID(`#sent-crawl`)),
		chromedp.Click(chromedp.ID(`#sent-crawl`)),
		chromedp.WaitVisible(chromedp.ID(`#crawl-queues`)))
	b.waitJS(crawlID+"'s requests queued on its page", `Number(document.getElementById("queued-total").textContent) > 0`, 30*time.Second)
	return ledger.Crawl{SpiderID: "link", AppID: appID, CrawlID: crawlID}
}

// queuedFor counts a crawl's requests in site2's queue.
func (c *cluster) queuedFor(cr ledger.Crawl) int {
	members, err := c.rdb.ZRange(context.Background(), "link:127.0.0.2.:queue", 0, -1).Result()
	if err != nil {
		c.tb.Fatal(err)
	}
	n := 0
	for _, m := range members {
		if strings.Contains(m, `"crawlid":"`+cr.CrawlID+`"`) {
			n++
		}
	}
	return n
}
