package trial_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	_ "github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/all"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/trial"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/extract"
)

func request(t *testing.T, member string) *crawlrequest.Request {
	t.Helper()
	r, err := crawlrequest.Decode([]byte(member))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func trier(t *testing.T, allowLoopback bool) *trial.Trier {
	return trierOf(t, allowLoopback, links.MaxPerPage.Default())
}

// trierOf is trier whose spiders follow at most maxLinks links of a page.
func trierOf(t *testing.T, allowLoopback bool, maxLinks int) *trial.Trier {
	cfg := fetch.DefaultConfig()
	cfg.Timeout = 5 * time.Second
	cfg.ObeyRobots = true
	if allowLoopback {
		cfg.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}
	tr := trial.New(cfg, maxLinks)
	t.Cleanup(tr.Close)
	return tr
}

// extracted is the tried result's extracted values, decoded.
func extracted(t *testing.T, res *trial.Result) map[string]any {
	t.Helper()
	if res == nil {
		return nil
	}
	v, ok := res.Page.Extra["extracted"].(extract.Values)
	if !ok {
		t.Fatalf("extracted is %T", res.Page.Extra["extracted"])
	}
	m, err := v.Map()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestATriedRequestGivesItsResultExtractedFieldsAndLinks(t *testing.T) {
	site := testsite.Start(t)
	r := request(t, `{"appid":"a","crawlid":"c","spiderid":"link","maxdepth":1,"url":"`+site.URL("/")+`",`+
		`"deny_regex":["/deny/"],"extract":{"title":{"css":"title"},"n":{"xpath":"count(//a)"}}}`)
	res, err := trier(t, true).Try(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	x := extracted(t, res)
	if res.Page.StatusCode != 200 || x["title"] != "Test site" || x["n"] == nil {
		t.Errorf("result %d, extracted %v", res.Page.StatusCode, x)
	}
	reasons := map[string]string{}
	for _, l := range res.Refused {
		reasons[l.URL] = l.Reason
	}
	if reasons[site.URL("/deny/1")] != "regex" || reasons[site.URL("/files/report.pdf")] != "extension" {
		t.Errorf("refused %v", res.Refused)
	}
	followed := map[string]bool{}
	for _, l := range res.Followed {
		followed[l.URL] = true
	}
	if !followed[site.URL("/page/1")] || followed[site.URL("/deny/1")] || len(res.Page.Links) != len(res.Followed) {
		t.Errorf("followed %v", res.Followed)
	}
	// At its maxdepth every link is refused for it, and nothing was queued
	// or fetched but the page (and robots.txt).
	r = request(t, `{"appid":"a","crawlid":"c","url":"`+site.URL("/")+`"}`)
	res, err = trier(t, true).Try(context.Background(), r)
	if err != nil || len(res.Followed) != 0 || len(res.Refused) == 0 || res.Refused[0].Reason != trial.RefusedMaxDepth {
		t.Errorf("at maxdepth: %+v, %v", res, err)
	}
	for _, h := range site.Hits() {
		if h.Path != "/" && h.Path != "/robots.txt" {
			t.Errorf("fetched %s", h.Path)
		}
	}
}

// TestATriedPageOfTooManyLinksIsReadAsACrawlReadsIt: of a page of 100,000
// links under a limit of 10 links a page, the first 10 are followed, the
// other 30 of the 40 hrefs read are refused as too_many_links, and the
// rest are counted unread, as a crawl's ledger counts them.
func TestATriedPageOfTooManyLinksIsReadAsACrawlReadsIt(t *testing.T) {
	site := testsite.Start(t)
	r := request(t, `{"appid":"a","crawlid":"c","maxdepth":1,"url":"`+site.URL("/links/100000")+`"}`)
	res, err := trierOf(t, true, 10).Try(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Followed) != 10 || res.Followed[9].URL != site.URL(testsite.LinkBombHref(9)) {
		t.Fatalf("followed %d: %v", len(res.Followed), res.Followed)
	}
	if len(res.Refused) != 30 || res.UnreadLinks != 100000-40 {
		t.Fatalf("refused %d, unread %d", len(res.Refused), res.UnreadLinks)
	}
	for i, l := range res.Refused {
		if l.Reason != "too_many_links" || l.URL != site.URL(testsite.LinkBombHref(10+i)) {
			t.Fatalf("refusal %d: %+v", i, l)
		}
	}
}

func TestATriedSessionKeepsItsCookiesAcrossTheLoginsRedirect(t *testing.T) {
	site := testsite.Start(t)
	login := `{"appid":"a","crawlid":"c","url":"` + site.URL("/login") + `","method":"POST","body":"user=alice&password=secret",` +
		`"headers":{"Content-Type":"application/x-www-form-urlencoded"},"extract":{"name":{"css":"h1.name"}}`
	res, err := trier(t, true).Try(context.Background(), request(t, login+`,"session":true}`))
	if err != nil || res.Page.StatusCode != 200 || extracted(t, res)["name"] != "Product 0" {
		t.Fatalf("with a session: %+v, %v", res, err)
	}
	res, err = trier(t, true).Try(context.Background(), request(t, login+`}`))
	if err != nil || res.Page.StatusCode != 403 {
		t.Fatalf("without: %+v, %v", res, err)
	}
}

func TestAnInternalAddressIsRefusedAsTheCrawlerRefusesIt(t *testing.T) {
	site := testsite.Start(t)
	_, err := trier(t, false).Try(context.Background(), request(t, `{"appid":"a","crawlid":"c","url":"`+site.URL("/")+`"}`))
	if fetch.DropReason(err) != "private_address" {
		t.Errorf("got %v", err)
	}
	if len(site.Hits()) != 0 {
		t.Errorf("the site was reached: %v", site.Hits())
	}
}
