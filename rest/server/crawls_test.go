package server_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// queueCrawl writes a crawl as the Kafka Monitor and a crawler do: seeds
// queued in domain queues and counted in its ledger at start, then done of
// them fetched and published.
func queueCrawl(t *testing.T, rdb *redis.Client, c ledger.Crawl, start time.Time, seeds map[string]int, done int) {
	t.Helper()
	ctx := context.Background()
	if err := ledger.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	pipe := rdb.Pipeline()
	for domain, n := range seeds {
		for i := range n {
			member := fmt.Sprintf(`{"url":"http://%s/%d","appid":%q,"crawlid":%q,"priority":%d}`, domain, i, c.AppID, c.CrawlID, i)
			ledger.QueueSeed(ctx, pipe, c.SpiderID+":"+domain+":queue", float64(-i), member, c, start, time.Hour)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	harness.CrawlerTally(t, rdb, c, 0, done, start.Add(time.Second))
}

func crawlIDs(t *testing.T, a answer) []string {
	t.Helper()
	data, _ := a.Body["data"].(map[string]any)
	list, ok := data["crawls"].([]any)
	if !ok {
		t.Fatalf("no crawls list in %s", a.Raw)
	}
	var out []string
	for _, e := range list {
		m := e.(map[string]any)
		out = append(out, fmt.Sprintf("%s/%s/%s", m["spiderid"], m["appid"], m["crawlid"]))
	}
	return out
}

func TestCrawlsListsCrawlsNewestFirstByPage(t *testing.T) {
	c, in := startOne(t)
	t0 := time.Now().Add(-time.Hour)
	for i := range 5 {
		queueCrawl(t, c.rdb, ledger.Crawl{SpiderID: "link", AppID: "app1", CrawlID: fmt.Sprintf("c%d", i)}, t0.Add(time.Duration(i)*time.Minute), map[string]int{"a.com": 1}, 0)
	}
	queueCrawl(t, c.rdb, ledger.Crawl{SpiderID: "wandering", AppID: "app2", CrawlID: "w"}, t0.Add(10*time.Minute), map[string]int{"b.com": 2}, 1)

	for _, tc := range []struct {
		name, query string
		want        string
		total       float64
	}{
		{"every app", "", "[wandering/app2/w link/app1/c4 link/app1/c3 link/app1/c2 link/app1/c1 link/app1/c0]", 6},
		{"one app", "?appid=app1", "[link/app1/c4 link/app1/c3 link/app1/c2 link/app1/c1 link/app1/c0]", 5},
		{"a page", "?appid=app1&offset=1&limit=2", "[link/app1/c3 link/app1/c2]", 5},
		{"past the end", "?appid=app1&offset=10", "[]", 5},
		{"an app without crawls", "?appid=nobody", "[]", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := in.do(t, "GET", "/crawls"+tc.query, "", "")
			if a.Code != 200 || a.Body["status"] != "SUCCESS" {
				t.Fatalf("status %d: %s", a.Code, a.Raw)
			}
			if got := fmt.Sprint(crawlIDs(t, a)); got != tc.want {
				t.Errorf("crawls %s, want %s", got, tc.want)
			}
			if data := a.Body["data"].(map[string]any); data["total"] != tc.total {
				t.Errorf("total %v, want %v", data["total"], tc.total)
			}
		})
	}
	a := in.do(t, "GET", "/crawls?appid=app2", "", "")
	first := a.Body["data"].(map[string]any)["crawls"].([]any)[0].(map[string]any)
	p := first["progress"].(map[string]any)
	if p["seeds"] != 2.0 || p["published"] != 1.0 || p["queued"] != 1.0 || p["state"] != "running" {
		t.Errorf("progress %v, want 2 seeds, 1 published, 1 queued, running", p)
	}
	if d := a.Body["data"].(map[string]any); d["limit"] != float64(50) || d["offset"] != 0.0 {
		t.Errorf("limit %v offset %v, want the defaults 50 and 0", d["limit"], d["offset"])
	}
}

func TestCrawlShowsItsProgressAndDomains(t *testing.T) {
	c, in := startOne(t)
	start := time.Unix(1767323000, 0)
	queueCrawl(t, c.rdb, ledger.Crawl{SpiderID: "link", AppID: "app1", CrawlID: "c/1"}, start, map[string]int{"a.com": 3, "b.org": 1}, 0)
	queueCrawl(t, c.rdb, ledger.Crawl{SpiderID: "wandering", AppID: "app1", CrawlID: "w"}, start, map[string]int{"a.com": 1}, 1)
	// A crawl fed by the original's Kafka Monitor: queued, no ledger.
	c.rdb.ZAdd(context.Background(), "link:c.net:queue", redis.Z{Score: -3, Member: `{"url":"http://c.net/","appid":"app1","crawlid":"python","priority":3}`})

	a := in.do(t, "GET", "/crawls/"+url.PathEscape("c/1")+"?appid=app1", "", "")
	want := `{"data":{"appid":"app1","crawlid":"c/1","domains":{"a.com":{"high_priority":2,"low_priority":0,"total":3},` +
		`"b.org":{"high_priority":0,"low_priority":0,"total":1}},"progress":{"done":0,"dropped":{},"enqueued":0,"fetched":0,` +
		`"in_flight":0,"last_activity":1767323000,"published":0,"published_truncated":0,"purged":{},"queued":4,"refused":{},` +
		`"retried":0,"seeds":4,"started":1767323000,"state":"running","status_codes":{}},"spiderid":"link","total_pending":4},` +
		`"error":null,"status":"SUCCESS"}`
	if a.Code != 200 || harness.JSONText(t, a.Body) != want {
		t.Fatalf("status %d\n%s\nwant\n%s", a.Code, harness.JSONText(t, a.Body), want)
	}
	a = in.do(t, "GET", "/crawls/w?appid=app1&spiderid=wandering", "", "")
	if p := a.Body["data"].(map[string]any)["progress"].(map[string]any); a.Code != 200 || p["published"] != 1.0 || p["queued"] != 0.0 {
		t.Fatalf("status %d: %s", a.Code, a.Raw)
	}
	a = in.do(t, "GET", "/crawls/python?appid=app1", "", "")
	if d := a.Body["data"].(map[string]any); a.Code != 200 || d["progress"] != nil || d["total_pending"] != 1.0 {
		t.Fatalf("a crawl without a ledger: status %d: %s", a.Code, a.Raw)
	}
}

func TestCrawlsRefuseBadQueriesClearly(t *testing.T) {
	_, in := startOne(t)
	const badQuery = "Invalid query parameter."
	for _, tc := range []struct {
		name, method, path string
		code               int
		message, cause     string
	}{
		{"a negative offset", "GET", "/crawls?offset=-1", 400, badQuery, `offset must be an integer from 0 to 1073741824, got "-1".`},
		{"a limit that is no number", "GET", "/crawls?limit=ten", 400, badQuery, `limit must be an integer from 1 to 500, got "ten".`},
		{"a limit of zero", "GET", "/crawls?limit=0", 400, badQuery, `limit must be an integer from 1 to 500, got "0".`},
		{"a limit above the maximum", "GET", "/crawls?limit=501", 400, badQuery, `limit must be an integer from 1 to 500, got "501".`},
		{"an unknown parameter", "GET", "/crawls?app=x", 400, badQuery, `Unknown query parameter "app"; known: appid, offset, limit.`},
		{"a crawl without appid", "GET", "/crawls/c1", 400, "The appid query parameter is required.", ""},
		{"a crawl with an unknown parameter", "GET", "/crawls/c1?appid=a&limit=1", 400, badQuery, `Unknown query parameter "limit"; known: appid, spiderid.`},
		{"an unknown crawl", "GET", "/crawls/nope?appid=a", 404, "Could not find the crawl",
			`No crawl "nope" of app "a" for spider "link" has a ledger or queued requests.`},
		{"crawls by POST", "POST", "/crawls", 405, "The method is not allowed for the requested URL.", ""},
		{"a crawl by DELETE", "DELETE", "/crawls/c1?appid=a", 405, "The method is not allowed for the requested URL.", ""},
		{"an empty crawl id", "GET", "/crawls/", 404, "The desired endpoint does not exist", ""},
		{"an empty crawl id by DELETE", "DELETE", "/crawls/", 404, "The desired endpoint does not exist", ""},
		{"a crawl id with a dot segment, unescaped", "GET", "/crawls/a/../b?appid=a", 404, "The desired endpoint does not exist", ""},
		{"a crawl id with a dot segment, escaped", "GET", "/crawls/a%2F..%2Fb?appid=a", 404, "Could not find the crawl",
			`No crawl "a/../b" of app "a" for spider "link" has a ledger or queued requests.`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := in.do(t, tc.method, tc.path, "", "")
			errObj, _ := a.Body["error"].(map[string]any)
			cause, _ := errObj["cause"].(string)
			if a.Code != tc.code || a.Body["status"] != "FAILURE" || a.Body["data"] != nil || errObj["message"] != tc.message || cause != tc.cause {
				t.Fatalf("status %d: %s\nwant %d %q %q", a.Code, a.Raw, tc.code, tc.message, tc.cause)
			}
		})
	}
}
