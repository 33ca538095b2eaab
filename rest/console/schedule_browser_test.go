package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
)

// A scheduled crawl's page, in a real Chromium against a whole cluster:
// it shows the schedule and the table of its runs, the same runs GET
// /crawls/<crawlid> lists; its Cancel button (confirmed) ends the
// schedule, with the answer shown: the run in progress goes on to its end
// and no later run starts, while the page shows the schedule ended and no
// button. An unscheduled crawl's page shows none of it.
func TestConsoleShowsAScheduleAndCancelsIt(t *testing.T) {
	consoleShowsAScheduleAndCancelsIt(t, false)
}

// The same on a Redis Cluster (three masters, three replicas), where the
// schedule lives under the tag {ledger}, each run starts in three steps and
// a run's counts are the sum of its domains' shares on every master.
func TestConsoleShowsAScheduleAndCancelsItOnARedisCluster(t *testing.T) {
	consoleShowsAScheduleAndCancelsIt(t, true)
}

func consoleShowsAScheduleAndCancelsIt(t *testing.T, onRedisCluster bool) {
	chromium := chromiumFor(t, "starts a whole cluster and a browser")
	// Each crawl comes in one message: no quiet period before a run
	// completes (LEDGER_COMPLETE_QUIET), so runs follow every 2 s.
	c := newClusterOn(t, onRedisCluster, map[string]string{"LEDGER_COMPLETE_QUIET": "0"})
	b := newBrowser(t, chromium)
	shots := screenshotDir(t)
	ui := c.restURL + "/ui/"
	const appID = "scheduletest"
	plain := c.crawlBefore(appID, "plain1")
	sched := ledger.Crawl{SpiderID: "link", AppID: appID, CrawlID: "sched1"}
	c.postFeed(fmt.Sprintf(`{"url": %q, "appid": %q, "crawlid": "sched1", "maxdepth": 1, "recrawl": {"every": 2, "emit": "changed"}}`, c.site1, appID))
	harness.WaitFor(t, "run 2 of sched1 to start", 60*time.Second, func() bool {
		in, err := recrawl.Read(context.Background(), c.frontier, sched)
		return err == nil && in != nil && in.RunsStarted >= 2
	})

	// The schedule and its runs, as the API gives them. Runs go on while
	// the test reads: the page is read between two reads of the API.
	link := ui + "crawl?spiderid=link&appid=" + appID + "&crawlid=sched1"
	before := c.crawlAPI(appID, "sched1")
	b.do("open sched1's page", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID(`#schedule`)))
	shown := eval[[]map[string]string](b, `[...document.querySelectorAll("#runs tr[data-run]")].map(r => ({
		run: r.dataset.run, completed: r.dataset.completed, started: r.cells[1].textContent, progress: r.querySelector(".run-progress").textContent}))`)
	for sel, want := range map[string]string{"#schedule-every": "2s", "#schedule-runs": "until stopped or expired",
		"#schedule-emit": "changed pages only (from run 2)", "#schedule-adaptive": "no"} {
		if got := strings.TrimSpace(b.text(sel)); got != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	if got := b.text("#schedule-next"); !strings.HasPrefix(got, "due 20") || !strings.HasSuffix(got, " UTC") {
		t.Errorf("the next run shows %q, want when it is due", got)
	}
	after := c.crawlAPI(appID, "sched1")
	runsBefore, _ := before["runs"].([]any)
	runs, _ := after["runs"].([]any)
	if len(shown) < 2 || len(shown) < len(runsBefore) || len(shown) > len(runs) {
		t.Fatalf("the page lists runs %v; the API %v before and %v after: want as many as either", shown, before["runs"], after["runs"])
	}
	for i, row := range shown {
		r := runs[i].(map[string]any)
		started := time.Unix(0, int64(r["started"].(float64)*1e9)).UTC().Format("2006-01-02 15:04:05 UTC")
		if row["run"] != fmt.Sprint(r["run"]) || row["started"] != started {
			t.Errorf("run row %d shows %v, the API %v", i, row, r)
		}
		doneBefore := i < len(runsBefore) && runsBefore[i].(map[string]any)["completed"] != nil
		if (doneBefore && row["completed"] != "yes") || (row["completed"] == "yes" && r["completed"] == nil) {
			t.Errorf("run %v shows completed %s, the API completed %v before and %v after", r["run"], row["completed"],
				doneBefore, r["completed"] != nil)
		}
	}
	// Run 1 is complete: its counts are final on both sides.
	p1 := runs[0].(map[string]any)["progress"].(map[string]any)
	done, total := p1["done"].(float64), p1["seeds"].(float64)+p1["enqueued"].(float64)
	if first := shown[0]; first["completed"] != "yes" || first["progress"] != fmt.Sprintf("%.0f / %.0f", done, total) || done != float64(plain) {
		t.Errorf("run 1 shows %v, the API %v: want it completed with the %d pages of site1 done", first, p1, plain)
	}
	b.screenshot(shots, "console-schedule")
	b.noErrors("schedule")

	// Cancel, confirmed: the answer shown, the schedule ended.
	b.press("cancel the schedule", `#cancel-schedule`)
	if f := b.text("#flash"); !strings.Contains(f, "Cancelled: no later run starts") || !strings.Contains(f, `"ended_by": "cancel"`) {
		t.Fatalf("the cancel's answer is not shown: %s", f)
	}
	if got := b.text("#schedule-ended"); !strings.Contains(got, "ended (by a cancel)") {
		t.Errorf("after the cancel the page says %q, want the schedule ended by a cancel", got)
	}
	if eval[bool](b, `!!document.getElementById("cancel-schedule")`) {
		t.Error("the page still offers to cancel the ended schedule")
	}
	in, err := recrawl.Read(context.Background(), c.frontier, sched)
	if err != nil || in == nil || in.State != "ended" || in.EndedBy != "cancel" {
		t.Fatalf("the schedule after the cancel: %+v, %v", in, err)
	}
	b.noErrors("cancel")

	// The run in progress completes as any run; no later one starts while
	// a marker crawl runs three times, every second.
	harness.WaitFor(t, "sched1's last run to complete", 60*time.Second, func() bool {
		p, err := c.progress(sched)
		return err == nil && p != nil && p.State == ledger.StateComplete
	})
	if p, _ := c.progress(sched); p.EndedBy != "" {
		t.Errorf("the run in progress was ended by %s, want it to go on to its end", p.EndedBy)
	}
	marker := ledger.Crawl{SpiderID: "link", AppID: appID, CrawlID: "marker"}
	c.postFeed(fmt.Sprintf(`{"url": %q, "appid": %q, "crawlid": "marker", "maxdepth": 0, "recrawl": {"every": 1, "runs": 3}}`, c.site1, appID))
	harness.WaitFor(t, "the marker's third run to complete", 60*time.Second, func() bool {
		m, err := recrawl.Read(context.Background(), c.frontier, marker)
		p, perr := c.progress(marker)
		return err == nil && perr == nil && m != nil && m.RunsStarted == 3 && p != nil && p.State == ledger.StateComplete
	})
	if after, _ := recrawl.Read(context.Background(), c.frontier, sched); after.RunsStarted != in.RunsStarted {
		t.Errorf("run %d of sched1 started after the cancel", after.RunsStarted)
	}
	b.do("open sched1's page again", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID(`#schedule-ended`)))
	if n := eval[int](b, `document.querySelectorAll("#runs tr[data-run]").length`); n != in.RunsStarted {
		t.Errorf("the page lists %d runs after the cancel, want the %d started", n, in.RunsStarted)
	}
	if n := eval[int](b, `document.querySelectorAll('#runs tr[data-completed="no"]').length`); n != 0 {
		t.Errorf("%d runs still show running after the last completed", n)
	}
	b.noErrors("ended schedule")

	// An unscheduled crawl: no schedule, no runs, no cancel.
	b.do("open plain1's page", chromedp.Navigate(ui+"crawl?spiderid=link&appid="+appID+"&crawlid=plain1"),
		chromedp.WaitVisible(chromedp.ID(`#crawl-state`)))
	if eval[bool](b, `!!(document.getElementById("schedule") || document.getElementById("runs") || document.getElementById("cancel-schedule"))`) {
		t.Error("the page of an unscheduled crawl shows a schedule, runs or a cancel button")
	}
	b.noErrors("unscheduled crawl")
}

// progress is cr's progress as its ledger says: read from the one Redis,
// or on a Redis Cluster summed over its shares on every master.
func (c *cluster) progress(cr ledger.Crawl) (*ledger.Progress, error) {
	ctx := context.Background()
	if cc, ok := c.frontier.(*redis.ClusterClient); ok {
		ps, err := ledger.ReadClusterCrawls(ctx, cc, cr.SpiderID, cr.AppID, cr.CrawlID)
		return ps[cr], err
	}
	ps, err := ledger.Read(ctx, c.rdb, cr)
	if err != nil {
		return nil, err
	}
	return ps[0], nil
}

// postFeed sends body to the REST service's /feed; it must be accepted.
func (c *cluster) postFeed(body string) {
	c.tb.Helper()
	resp, err := http.Post(c.restURL+"/feed", "application/json", strings.NewReader(body))
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		c.tb.Fatalf("POST /feed %s: %s %s", body, resp.Status, raw)
	}
}

// crawlAPI is GET /crawls/<crawlID>'s data.
func (c *cluster) crawlAPI(appID, crawlID string) map[string]any {
	c.tb.Helper()
	resp, err := http.Get(c.restURL + "/crawls/" + crawlID + "?appid=" + appID)
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct {
		Data map[string]any `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK {
		c.tb.Fatalf("GET /crawls/%s: %s %v", crawlID, resp.Status, err)
	}
	return a.Data
}
