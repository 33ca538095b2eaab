package crawlspec_test

import (
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/crawlspec"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/extract"
)

func decode(t testing.TB, member string) *crawlrequest.Request {
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
	if got, err := page.Extra["extracted"].(extract.Values).Map(); err != nil || len(got) != 1 || got["t"] != "T" {
		t.Errorf("extracted %v, %v", got, err)
	}
	if plain.Extra != nil {
		t.Errorf("a page without rules got %v", plain.Extra)
	}
	if _, err := x.Rules(decode(t, `{"appid":"a","crawlid":"c","url":"http://example.com/","extract":{"t":{"css":"["}}}`)); err == nil {
		t.Error("a bad rule compiled")
	}
}

// TestTheResultIsWrittenAsWithAMapOfTheValues: a page's crawl result with
// its extracted Values, from its Doc (the tree its links were read from)
// or not, is the JSON the crawler wrote when extracted was Apply's map.
func TestTheResultIsWrittenAsWithAMapOfTheValues(t *testing.T) {
	var x crawlspec.Extractor
	rules, err := x.Rules(decode(t, `{"appid":"a","crawlid":"c","url":"http://example.com/","extract":{`+
		`"title":{"css":"title"},"links":{"css":"a","attr":"href","all":true},"h":{"xpath":"//h1"},"n":{"xpath":"count(//a)"},`+
		`"nan":{"xpath":"number(//h1)","url_regex":"/never/"},"level":{"regex":"level (\\d+)"},"ld":{"jsonld":true},"none":{"css":"table","all":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	body := "<!DOCTYPE html><html><head><title>\"Page\" <1> & \u2028 caf\u00e9</title>" +
		`<script type="application/ld+json">{"@type": "Thing", "n": 2.5}</script></head><body><h1>A tree page at level 2.</h1>` +
		`<a href="/page/1">1</a><a href="?q=a b">q</a><a href="//cdn.example/x">cdn</a><a href="#top">top</a></body></html>`
	for _, shared := range []bool{false, true} {
		page := spider.NewPage(&spider.Response{URL: "http://example.com/dir/page", Status: 200, Body: []byte(body), ShareParse: shared})
		if shared {
			page.Doc.Scan(nopSink{})
		}
		withMap := *page
		withMap.Extra = map[string]any{"extracted": rules.Apply(page.ResponseURL, page.Body)}
		crawlspec.Apply(rules, []*spider.Page{page})
		got, err := page.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := withMap.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("shared parse %v: the result is\n%s\nwith a map\n%s", shared, got, want)
		}
		if marshalled, err := page.MarshalJSON(); err != nil || string(marshalled) != string(want) {
			t.Errorf("MarshalJSON: %s, %v", marshalled, err)
		}
	}
}

type nopSink struct{}

func (nopSink) StartTag(string, []html.Attribute, bool) {}
func (nopSink) EndTag(string)                           {}
func (nopSink) Text(string)                             {}
