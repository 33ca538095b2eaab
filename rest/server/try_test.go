package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
)

func TestTryAnswersTheResultExtractedFieldsAndLinksAndQueuesNothing(t *testing.T) {
	site := testsite.Start(t)
	c, in := startOne(t, "FETCH_ALLOWED_NETWORKS=127.0.0.0/8")
	a := in.post(t, "/try", `{"url": "`+site.URL("/")+`", "appid": "app", "crawlid": "t1", "maxdepth": 1,
		"deny_regex": ["/deny/"], "extract": {"title": {"css": "title"}, "h1": {"xpath": "//h1"}}}`)
	if a.Code != 200 {
		t.Fatalf("%d %s", a.Code, a.Raw)
	}
	data := a.Body["data"].(map[string]any)
	result := data["result"].(map[string]any)
	x := result["extracted"].(map[string]any)
	if result["status_code"] != 200.0 || x["title"] != "Test site" || x["h1"] != "Test site" || result["crawlid"] != "t1" {
		t.Errorf("result %.500s", a.Raw)
	}
	var followed, refused []string
	for _, l := range data["followed"].([]any) {
		followed = append(followed, l.(map[string]any)["url"].(string))
	}
	for _, l := range data["refused"].([]any) {
		m := l.(map[string]any)
		refused = append(refused, m["url"].(string)+" "+m["reason"].(string))
	}
	all := strings.Join(refused, "\n")
	if !strings.Contains(strings.Join(followed, " "), site.URL("/page/1")) ||
		!strings.Contains(all, site.URL("/deny/1")+" regex") || !strings.Contains(all, site.URL("/files/report.pdf")+" extension") {
		t.Errorf("followed %v\nrefused %v", followed, refused)
	}
	if n := c.count(t, "demo.incoming"); n != 0 {
		t.Errorf("/try sent %d messages to Kafka", n)
	}
	if keys := c.rdb.Keys(t.Context(), "*").Val(); strings.Contains(strings.Join(keys, " "), "queue") {
		t.Errorf("/try queued: %v", keys)
	}
}

func TestTryRefusesAnInternalAddressAsTheCrawlerDoes(t *testing.T) {
	site := testsite.Start(t)
	c := newCluster(t)
	in := c.start(t) // FETCH_BLOCK_PRIVATE's default
	a := in.post(t, "/try", `{"url": "`+site.URL("/")+`", "appid": "app", "crawlid": "t2"}`)
	cause, _ := a.Body["error"].(map[string]any)["cause"].(string)
	if a.Code != http.StatusUnprocessableEntity || !strings.HasPrefix(cause, "private_address: ") {
		t.Errorf("%d %s", a.Code, a.Raw)
	}
	if len(site.Hits()) != 0 {
		t.Errorf("the site was reached")
	}
}

func TestTryRefusesBadRequestsAsFeedDoes(t *testing.T) {
	_, in := startOne(t)
	for _, tc := range []struct{ body, cause string }{
		{`{"url": "http://x.example/", "appid": "app", "crawlid": "t", "extract": {"t": {"css": "a["}}}`, `extract.t: css "a[": `},
		{`{"url": "http://x.example/", "appid": "app", "crawlid": "t", "headers": {"Host": "y"}}`, `headers: Host is the cluster's to send`},
		{`{"stats": "all", "appid": "app", "uuid": "u"}`, "it is a request for StatsHandler"},
	} {
		a := in.post(t, "/try", tc.body)
		cause, _ := a.Body["error"].(map[string]any)["cause"].(string)
		if a.Code != http.StatusBadRequest || !strings.Contains(cause, tc.cause) {
			t.Errorf("%s: %d %s", tc.body, a.Code, a.Raw)
		}
	}
}

func TestTryIsLimitedInRateAndGuardedAsFeedIs(t *testing.T) {
	site := testsite.Start(t)
	_, in := startOne(t, "FETCH_ALLOWED_NETWORKS=127.0.0.0/8", "TRY_RATE=0.01", "TRY_BURST=2", "API_TOKEN=sesame")
	body := `{"url": "` + site.URL("/") + `", "appid": "app", "crawlid": "t3"}`
	if a := in.post(t, "/try", body); a.Code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d %s", a.Code, a.Raw)
	}
	post := func() *http.Response {
		req, _ := http.NewRequest(http.MethodPost, in.url+"/try", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sesame")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	for i := range 2 {
		if res := post(); res.StatusCode != 200 {
			t.Fatalf("request %d within the burst: %d", i, res.StatusCode)
		}
	}
	if res := post(); res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "100" {
		t.Errorf("beyond the burst: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
}
