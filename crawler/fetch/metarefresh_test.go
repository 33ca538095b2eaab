package fetch_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
)

func TestMetaRefreshFindsTheTargetAsScrapyDoes(t *testing.T) {
	htmlHeader := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	cases := []struct {
		name, body string
		header     http.Header
		want       string
		delay      float64
	}{
		{"http-equiv first", `<html><head><meta http-equiv="refresh" content="0; url=/target?a=1&amp;b=2"></head></html>`, htmlHeader, "http://example.com/target?a=1&b=2", 0},
		{"content first, single quotes", `<meta content='5;URL=next.html' http-equiv='Refresh'>`, htmlHeader, "http://example.com/dir/next.html", 5},
		{"a quoted url and a fraction", `<META HTTP-EQUIV="REFRESH" CONTENT="0.5; url='http://other.org/x'">`, htmlHeader, "http://other.org/x", 0.5},
		{"a long s, which (?i) folds to s as Python's re.I does", `<meta http-equiv="refreſh" content="2; url=/t">`, htmlHeader, "http://example.com/t", 2},
		{"no content type, sniffed", `<!DOCTYPE html><html><head><meta http-equiv="refresh" content="1; url=/t"></head>`, http.Header{}, "http://example.com/t", 1},
	}
	for _, c := range cases {
		res := &fetch.Result{URL: "http://example.com/dir/page", Header: c.header, Body: []byte(c.body)}
		got, delay, ok := fetch.MetaRefresh(res)
		if !ok || got != c.want || delay != c.delay {
			t.Errorf("%s: %q %v %v, want %q after %v", c.name, got, delay, ok, c.want, c.delay)
		}
	}
	none := []struct{ name, body, contentType string }{
		{"no url: a reload", `<meta http-equiv="refresh" content="30">`, "text/html"},
		{"in a comment", `<!-- <meta http-equiv="refresh" content="0; url=/t"> -->`, "text/html"},
		{"not HTML", `<meta http-equiv="refresh" content="0; url=/t">`, "application/json"},
		{"a javascript url", `<meta http-equiv="refresh" content="0; url=javascript:alert(1)">`, "text/html"},
		{"beyond the first 4096 bytes", string(make([]byte, 4096)) + `<meta http-equiv="refresh" content="0; url=/t">`, "text/html"},
	}
	for _, c := range none {
		res := &fetch.Result{URL: "http://example.com/", Header: http.Header{"Content-Type": {c.contentType}}, Body: []byte(c.body)}
		if got, _, ok := fetch.MetaRefresh(res); ok {
			t.Errorf("%s: %q, want none", c.name, got)
		}
	}
}

// BenchmarkMetaRefresh is the check on a page without a meta refresh, which
// the crawler makes on every HTML page.
func BenchmarkMetaRefresh(b *testing.B) {
	body := []byte("<html><head><title>t</title><meta charset=utf-8></head><body>" + strings.Repeat(`<p><a href="/page/1/2">a link</a> and some text</p>`, 100) + "</body></html>")
	res := &fetch.Result{URL: "http://example.com/", Header: http.Header{"Content-Type": {"text/html"}}, Body: body}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := fetch.MetaRefresh(res); ok {
			b.Fatal("found a meta refresh in a page without one")
		}
	}
}
