package crawlspec_test

import (
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/crawlspec"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

func decode(t *testing.T, member string) *crawlrequest.Request {
	t.Helper()
	r, err := crawlrequest.Decode([]byte(member))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAMemberQueuedByAnOriginalCrawlerIsAPlainGET(t *testing.T) {
	// Scrapy's serialized request: its own method, headers (lists) and body.
	r := decode(t, `{"url":"http://example.com/b","method":"GET","headers":{"Referer":["http://example.com/"]},"body":"",`+
		`"meta":{"appid":"a","crawlid":"c","spiderid":"link","useragent":"ua/1","cookie":"k=v"}}`)
	req, shape, err := crawlspec.FetchRequest(r)
	if err == nil || !strings.Contains(err.Error(), "headers: not an object of strings") {
		t.Errorf("error %v", err)
	}
	if req.Method != "" || req.Header != nil || req.Body != nil || shape.Method != "GET" || req.UserAgent != "ua/1" || req.Cookie != "k=v" {
		t.Errorf("request %+v, shape %+v", req, shape)
	}
}

func TestExtractionIsAddedOnlyForCrawlsWithRules(t *testing.T) {
	var x crawlspec.Extractor
	page := &spider.Page{ResponseURL: "http://example.com/", Body: "<title>T</title>"}
	plain := &spider.Page{ResponseURL: "http://example.com/", Body: "<title>T</title>"}
	rules, err := x.Rules(decode(t, `{"appid":"a","crawlid":"c","url":"http://example.com/","extract":{"t":{"css":"title"},"u":{"css":"h1","url_regex":"/x"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	crawlspec.Apply(rules, []*spider.Page{page})
	none, err := x.Rules(decode(t, `{"appid":"a","crawlid":"c","url":"http://example.com/"}`))
	if err != nil || none != nil {
		t.Fatalf("no rules: %v, %v", none, err)
	}
	crawlspec.Apply(none, []*spider.Page{plain})
	if got := page.Extra["extracted"].(map[string]any); len(got) != 1 || got["t"] != "T" {
		t.Errorf("extracted %v", got)
	}
	if plain.Extra != nil {
		t.Errorf("a page without rules got %v", plain.Extra)
	}
	if _, err := x.Rules(decode(t, `{"appid":"a","crawlid":"c","url":"http://example.com/","extract":{"t":{"css":"["}}}`)); err == nil {
		t.Error("a bad rule compiled")
	}
}
