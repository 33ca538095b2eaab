package link_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/link"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

const seedJSON = `{"url":"http://example.com/","appid":"app","crawlid":"crawl1","spiderid":"link","priority":5,` +
	`"maxdepth":%d,"curdepth":%d,"allowed_domains":["example.com"],"allow_regex":null,"deny_regex":["/private"],` +
	`"deny_extensions":null,"expires":0,"useragent":"bot/1","cookie":"a=b","attrs":{"k":"v"},"ts":1.5,"retry_times":2}`

const page = `<html><body>
<a href="/one">One</a>
<a href="two.html">Two</a>
<a href="http://www.example.com/three?b=1&a=2#x">Three</a>
<a href="http://elsewhere.org/">Elsewhere</a>
<a href="/private/area">Private</a>
<a href="/doc.pdf">PDF</a>
<a href="/one#again">One again</a>
</body></html>`

func respond(t testing.TB, maxDepth, curDepth int, body string) *spider.Response {
	t.Helper()
	req, err := crawlrequest.Decode([]byte(fmt.Sprintf(seedJSON, maxDepth, curDepth)))
	if err != nil {
		t.Fatal(err)
	}
	return &spider.Response{
		Request: req, URL: "http://example.com/", Status: 200, StatusText: "OK",
		Header: http.Header{"Content-Type": {"text/html"}},
		Body:   []byte(body),
	}
}

func TestTheLinkSpiderIsRegistered(t *testing.T) {
	s, err := spider.New("link")
	if err != nil || s.Name() != "link" {
		t.Fatalf("spider.New(link) = %v, %v", s, err)
	}
}

func TestParseFollowsAllowedLinksOneLevelDeeper(t *testing.T) {
	resp := respond(t, 2, 0, page)
	out, err := link.Spider{}.Parse(context.Background(), resp)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Pages) != 1 {
		t.Fatalf("%d pages", len(out.Pages))
	}
	p := out.Pages[0]
	wantLinks := []spider.Link{
		{URL: "http://example.com/one", Text: "One"},
		{URL: "http://example.com/two.html", Text: "Two"},
		{URL: "http://www.example.com/three?a=2&b=1", Text: "Three"},
	}
	if !reflect.DeepEqual(p.Links, wantLinks) {
		t.Fatalf("links %q", p.Links)
	}
	if p.AppID != "app" || p.CrawlID != "crawl1" || string(p.Attrs) != `{"k":"v"}` || p.StatusCode != 200 || p.URL != "http://example.com/" {
		t.Fatalf("page %+v", p)
	}
	if len(out.Requests) != len(wantLinks) {
		t.Fatalf("%d requests", len(out.Requests))
	}
	for i, r := range out.Requests {
		if r.URL != wantLinks[i].URL || r.Priority != 5-10 || r.CurDepth != 1 || r.MaxDepth != 2 || r.RetryTimes != 0 {
			t.Errorf("request %d: %+v", i, r)
		}
		if r.AppID != "app" || r.CrawlID != "crawl1" || r.SpiderID != "link" || r.UserAgent != "bot/1" || r.Cookie != "a=b" ||
			!reflect.DeepEqual(r.AllowedDomains, []string{"example.com"}) || !reflect.DeepEqual(r.DenyRegex, []string{"/private"}) ||
			string(r.Attrs) != `{"k":"v"}` {
			t.Errorf("request %d lost crawl settings: %+v", i, r)
		}
		if ts, ok := r.Extra("ts"); !ok || string(ts) != "1.5" {
			t.Errorf("request %d lost ts", i)
		}
	}
}

func TestParseStopsAtMaxDepth(t *testing.T) {
	for _, depth := range []struct{ max, cur int }{{0, 0}, {1, 1}, {2, 3}} {
		out, err := link.Spider{}.Parse(context.Background(), respond(t, depth.max, depth.cur, page))
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Requests) != 0 || len(out.Pages) != 1 || out.Pages[0].Links == nil || len(out.Pages[0].Links) != 0 {
			t.Errorf("maxdepth %d curdepth %d: %d requests, links %v", depth.max, depth.cur, len(out.Requests), out.Pages[0].Links)
		}
	}
	out, _ := link.Spider{}.Parse(context.Background(), respond(t, 2, 1, page))
	if len(out.Requests) != 3 || out.Requests[0].CurDepth != 2 || out.Requests[0].Priority != -5 {
		t.Errorf("curdepth 1 of 2 must follow: %d requests", len(out.Requests))
	}
}

func TestErrorPagesArePublishedAndFollowed(t *testing.T) {
	resp := respond(t, 1, 0, `<h1>Gone</h1><a href="/home">home</a>`)
	resp.Status, resp.StatusText = 404, "Not Found"
	out, err := link.Spider{}.Parse(context.Background(), resp)
	if err != nil || len(out.Pages) != 1 || out.Pages[0].StatusCode != 404 || out.Pages[0].StatusMsg != "Not Found" || len(out.Requests) != 1 {
		t.Fatalf("out %+v, %v", out, err)
	}
}

func TestAnInvalidRegexIsAnErrorButThePageIsPublished(t *testing.T) {
	resp := respond(t, 1, 0, page)
	resp.Request.AllowRegex = []string{"(bad"}
	out, err := link.Spider{}.Parse(context.Background(), resp)
	if err == nil || !strings.Contains(err.Error(), "allow_regex") {
		t.Fatalf("err %v", err)
	}
	if len(out.Pages) != 1 || len(out.Requests) != 0 {
		t.Fatalf("%d pages, %d requests", len(out.Pages), len(out.Requests))
	}
	b, _ := json.Marshal(out.Pages[0])
	if !strings.Contains(string(b), `"links":[]`) {
		t.Fatalf("page %s", b)
	}
}

// benchPage is about 100 KB of HTML with 500 links.
func benchPage() string {
	var b strings.Builder
	b.WriteString("<html><head><title>bench</title></head><body>\n")
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&b, `<div class="item"><p>Paragraph %d with some text to pad the page out, as real pages are, more or less.</p>`+
			`<a href="/section/%d/article-%d.html?ref=list&amp;page=%d">Article number %d</a></div>`+"\n", i, i%20, i, i%7, i)
	}
	b.WriteString("</body></html>")
	return b.String()
}

func TestBenchPageIsWhatTheBenchmarkSays(t *testing.T) {
	p := benchPage()
	if len(p) < 90_000 || len(p) > 110_000 {
		t.Fatalf("page is %d bytes", len(p))
	}
	out, err := link.Spider{}.Parse(context.Background(), respond(t, 1, 0, p))
	if err != nil || len(out.Requests) != 500 {
		t.Fatalf("%d requests, %v", len(out.Requests), err)
	}
}

func BenchmarkParse100KBPage500Links(b *testing.B) {
	resp := respond(b, 1, 0, benchPage())
	b.SetBytes(int64(len(resp.Body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (link.Spider{}).Parse(context.Background(), resp); err != nil {
			b.Fatal(err)
		}
	}
}
