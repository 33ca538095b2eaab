package console_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/rest/server"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The Try page in a real browser: a request edited with its rules shows
// its extracted fields and its followed and refused links at once; a bad
// rule shows the validation's reason naming it.
func TestTryPageInABrowser(t *testing.T) {
	chromium := chromiumFor(t, "starts a browser")
	site := testsite.Start(t)
	r := harness.StartRedis(t)
	k := harness.StartKafka(t)
	env := harness.ClusterSettings(r.Port, k.Hosts(), "")
	env["FETCH_ALLOWED_NETWORKS"] = "127.0.0.0/8"
	s, err := settings.Load(server.Settings(), settings.Options{NoEnv: true, Flags: env})
	if err != nil {
		t.Fatal(err)
	}
	logs := &harness.OutputBuffer{}
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { rdb.Close() })
	_, base := serveREST(t, s, harness.Logger(t, logfactory.Settings("").Config(s), logs), rdb, server.WithAccessLog(logs))
	b := newBrowser(t, chromium)

	b.do("open the Try page", chromedp.Navigate(base+"/ui/try?url="+site.URL("/")), chromedp.WaitVisible(chromedp.CSS(`#try-form`)))
	if got := eval[string](b, `document.querySelector("#try-request").value`); !strings.Contains(got, site.URL("/")) {
		t.Fatalf("the example does not hold the URL asked for: %s", got)
	}
	req, _ := json.Marshal(map[string]any{
		"url": site.URL("/"), "appid": "console", "crawlid": "try", "maxdepth": 1, "deny_regex": []string{"/deny/"},
		"extract": map[string]any{"title": map[string]any{"css": "title"}, "items": map[string]any{"css": "li a", "all": true}},
	})
	b.do("try it",
		chromedp.SetValue(chromedp.CSS(`#try-request`), string(req)),
		chromedp.Click(chromedp.CSS(`#try-send`)),
		chromedp.WaitVisible(chromedp.CSS(`#try-result`)))
	if got := b.text(`#try-extracted tr[data-field="title"] pre`); got != `"Test site"` {
		t.Errorf("title shown as %q", got)
	}
	if got := b.text(`#try-extracted tr[data-field="items"] pre`); !strings.Contains(got, "/page/1") {
		t.Errorf("items shown as %q", got)
	}
	if got := b.text(`#try-followed`); !strings.Contains(got, site.URL("/page/1")) || strings.Contains(got, "/deny/") {
		t.Errorf("followed: %q", got)
	}
	if got := b.text(`#try-refused`); !strings.Contains(got, site.URL("/deny/1")) || !strings.Contains(got, "regex") {
		t.Errorf("refused: %q", got)
	}
	if got := b.text(`#try-status`); !strings.Contains(got, "200") {
		t.Errorf("status: %q", got)
	}
	b.screenshot(screenshotDir(t), "console-try")
	b.noErrors("try")

	bad := strings.Replace(string(req), `"css":"title"`, `"css":"a["`, 1)
	b.do("try a bad rule",
		chromedp.SetValue(chromedp.CSS(`#try-request`), bad),
		chromedp.Click(chromedp.CSS(`#try-send`)),
		chromedp.WaitVisible(chromedp.CSS(`#try-error`)))
	if got := b.text(`#try-error`); !strings.Contains(got, `extract.title: css "a[":`) {
		t.Errorf("the bad rule's error: %q", got)
	}
	if got := eval[string](b, `document.querySelector("#try-request").value`); got != bad {
		t.Errorf("the request was not kept for editing: %s", got)
	}
	b.noErrors("try a bad rule")
	if queued := rdb.Keys(t.Context(), "*:*:queue").Val(); len(queued) > 0 {
		t.Errorf("/try queued %v", queued)
	}
}
