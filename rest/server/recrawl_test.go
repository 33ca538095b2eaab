package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
)

// POST /recrawl/cancel ends a live schedule alone (the run in progress
// and its queued seed stay; info shows it ended by a cancel, with no next
// run), and answers clearly what it cannot cancel: a body that is not the
// schema's 400, a crawl the cluster does not know 404, a crawl without a
// schedule and a schedule that ended 409.
func TestRecrawlCancelEndsTheScheduleAlone(t *testing.T) {
	c, in := startOne(t)
	ctx := context.Background()
	scheduled := ledger.Crawl{SpiderID: "link", AppID: "app1", CrawlID: "hourly"}
	pipe := c.rdb.TxPipeline()
	recrawl.Feed(ctx, pipe, recrawl.Seed{Queue: "link:a.com:queue", Score: -1,
		Member: `{"appid":"app1","crawlid":"hourly","run":1,"url":"http://a.com/"}`, Crawl: scheduled,
		URL: "http://a.com/", Spec: recrawl.Spec{Every: 3600, Emit: recrawl.EmitChanged}}, time.Now(), time.Hour)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	queueCrawl(t, c.rdb, ledger.Crawl{SpiderID: "link", AppID: "app1", CrawlID: "once"}, time.Now(), map[string]int{"b.com": 1}, 0)

	for _, tc := range []struct {
		name, body string
		code       int
		message    string
	}{
		{"no crawlid", `{"appid": "app1"}`, 400, "JSON did not validate against schema."},
		{"an unknown field", `{"appid": "app1", "crawlid": "hourly", "every": 1}`, 400, "JSON did not validate against schema."},
		{"not JSON", `appid=app1`, 400, "The payload must be valid JSON."},
		{"an unknown crawl", `{"appid": "app1", "crawlid": "nosuch"}`, 404, "Could not find the crawl"},
		{"another spider's", `{"appid": "app1", "crawlid": "hourly", "spiderid": "other"}`, 404, "Could not find the crawl"},
		{"a crawl without a schedule", `{"appid": "app1", "crawlid": "once"}`, 409, "The crawl has no re-crawl schedule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := in.post(t, "/recrawl/cancel", tc.body)
			errObj, _ := a.Body["error"].(map[string]any)
			if a.Code != tc.code || a.Body["status"] != "FAILURE" || errObj["message"] != tc.message {
				t.Errorf("%s: %d %s, want %d %q", tc.body, a.Code, a.Raw, tc.code, tc.message)
			}
		})
	}
	if n := c.rdb.ZCard(ctx, "recrawl:due").Val(); n != 1 {
		t.Fatalf("recrawl:due holds %d schedules after the refused cancels, want the 1", n)
	}

	a := in.post(t, "/recrawl/cancel", `{"appid": "app1", "crawlid": "hourly"}`)
	data, _ := a.Body["data"].(map[string]any)
	sched, _ := data["recrawl"].(map[string]any)
	if a.Code != 200 || a.Body["status"] != "SUCCESS" || data["crawlid"] != "hourly" || data["spiderid"] != "link" ||
		sched["state"] != "ended" || sched["ended_by"] != "cancel" || sched["next_run_at"] != nil || sched["runs_started"] != 1.0 {
		t.Fatalf("cancel: %d %s, want 200 with the schedule ended by cancel", a.Code, a.Raw)
	}
	if n := c.rdb.ZCard(ctx, "recrawl:due").Val(); n != 0 {
		t.Errorf("recrawl:due holds %d schedules after the cancel, want none", n)
	}
	if n := c.rdb.ZCard(ctx, "link:a.com:queue").Val(); n != 1 {
		t.Errorf("the run in progress lost its queued seed: %d queued, want 1", n)
	}
	got := in.do(t, "GET", "/crawls/hourly?appid=app1", "", "")
	gotData, _ := got.Body["data"].(map[string]any)
	if s, _ := gotData["recrawl"].(map[string]any); s["state"] != "ended" || s["ended_by"] != "cancel" {
		t.Errorf("GET /crawls/hourly after the cancel: %s, want its schedule ended by cancel", got.Raw)
	}

	a = in.post(t, "/recrawl/cancel", `{"appid": "app1", "crawlid": "hourly"}`)
	errObj, _ := a.Body["error"].(map[string]any)
	if a.Code != 409 || errObj["message"] != "The crawl's re-crawl schedule has ended already" {
		t.Errorf("a second cancel: %d %s, want 409 ended already", a.Code, a.Raw)
	}
	if a := in.do(t, "GET", "/recrawl/cancel", "", ""); a.Code != 405 {
		t.Errorf("GET /recrawl/cancel: %d, want 405", a.Code)
	}
}
