package myspider_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/examples/myspider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// TestMySpiderIsRegisteredAndRecordsTheTitle is how a crawler finds and
// runs a custom spider: importing its package registers it, and
// spider.New builds it by the name in the requests' spiderid.
func TestMySpiderIsRegisteredAndRecordsTheTitle(t *testing.T) {
	if !slices.Contains(spider.Registered(), "myspider") {
		t.Fatalf("registered spiders: %v", spider.Registered())
	}
	s, err := spider.New("myspider")
	if err != nil {
		t.Fatal(err)
	}
	req, err := crawlrequest.Decode([]byte(`{"url":"http://example.com/","appid":"app","crawlid":"c1","spiderid":"myspider","maxdepth":3}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Parse(context.Background(), &spider.Response{
		Request: req, URL: req.URL, Status: 200,
		Header: http.Header{"Content-Type": {"text/html"}},
		Body:   []byte("<html><head><title>\n  Hello,   world </title></head><body><a href='/next'>next</a></body></html>"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Pages) != 1 || len(out.Requests) != 0 {
		t.Fatalf("%d pages, %d requests: myspider follows nothing", len(out.Pages), len(out.Requests))
	}
	b, err := json.Marshal(out.Pages[0])
	if err != nil {
		t.Fatal(err)
	}
	var result map[string]any
	if err := json.Unmarshal(b, &result); err != nil {
		t.Fatal(err)
	}
	if result["title"] != "Hello, world" || result["appid"] != "app" || result["crawlid"] != "c1" || result["status_code"] != 200.0 {
		t.Fatalf("result %s", b)
	}
}

func TestTitle(t *testing.T) {
	for doc, want := range map[string]string{
		"<title>A</title>":                   "A",
		"<TITLE>A &amp; B</TITLE>":           "A & B",
		"<p>no title</p>":                    "",
		"<title></title>":                    "",
		"<svg><title>first</title></svg>":    "first",
		"<title>unclosed <b>not bold</b>":    "unclosed <b>not bold</b>",
		"<title>x</title><title>y</title>":   "x",
		"\xff\xfe<title>\xffbad</title>":     "\xffbad",
		"<script><title>no</title></script>": "",
	} {
		if got := myspider.Title(doc); got != want {
			t.Errorf("Title(%q) = %q, want %q", doc, got, want)
		}
	}
}
