package crawlspec_test

import (
	"context"
	"net/http"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/crawlspec"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/link"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// testSitePage is a page of the crawler's test site, as
// BenchmarkExtractionCostFollowingLinks (crawler/e2e) crawls it.
const testSitePage = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Page 1.2</title></head>\n<body id=\"top\">\n" +
	"<h1>Page 1.2</h1>\n<p>A tree page at level 2.</p>\n<ul>\n<li><a href=\"/page/1/2/1\">/page/1/2/1</a></li>\n" +
	"<li><a href=\"/page/1/2/2\">/page/1/2/2</a></li>\n<li><a href=\"/page/1/2/3\">/page/1/2/3</a></li>\n</ul>\n</body></html>\n"

// BenchmarkPageWithRules: what a crawler does with a test-site page once
// fetched, as in BenchmarkExtractionCostFollowingLinks (maxdepth 1, an
// allow_regex no link matches): the link spider's parse (its links read
// from the rules' tree when rules read it), the rules applied
// (crawlspec.Apply) and the result written (Page.AppendJSON) — without
// rules and with that benchmark's five, pages alternating between the two
// so that both see the same machine; the mean thread CPU time of each
// (none-cpu-µs, rules5-cpu-µs) and what the rules add (rules5-cpu-µs-more).
// The crawler's whole CPU time a page (fetch, queues, Kafka) is about 200
// µs on top of none-cpu-µs.
func BenchmarkPageWithRules(b *testing.B) {
	var x crawlspec.Extractor
	none := decode(b, `{"appid":"e2e","crawlid":"c","spiderid":"link","url":"http://127.0.0.1:8080/page/1/2","maxdepth":1,"allow_regex":["^none:"],"attrs":{"n":1}}`)
	five := decode(b, `{"appid":"e2e","crawlid":"c","spiderid":"link","url":"http://127.0.0.1:8080/page/1/2","maxdepth":1,"allow_regex":["^none:"],"attrs":{"n":1},`+
		`"extract":{"title": {"css": "title"}, "heading": {"xpath": "//h1"}, "links": {"css": "a", "attr": "href", "all": true},`+
		` "level": {"regex": "level (\\d+)"}, "ld": {"jsonld": true}}}`)
	header := http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Content-Length": {"400"}, "Date": {"Sat, 28 Nov 2026 18:00:00 GMT"}}
	reqHeader := http.Header{"User-Agent": {"Scrapy/1.0"}, "Accept": {"text/html"}, "Accept-Encoding": {"gzip"}}
	var buf []byte
	one := func(req *crawlrequest.Request) {
		resp := &spider.Response{Request: req, URL: req.URL, Status: 200, StatusText: "OK", Header: header, RequestHeader: reqHeader,
			Body: []byte(testSitePage), ShareParse: x.ShareParse(req, req.URL)}
		out, err := link.Spider{}.Parse(context.Background(), resp)
		if err != nil || len(out.Pages) != 1 {
			b.Fatal(out, err)
		}
		rules, err := x.Rules(req)
		if err != nil {
			b.Fatal(err)
		}
		crawlspec.Apply(rules, out.Pages)
		if buf, err = out.Pages[0].AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	reqs := []*crawlrequest.Request{none, five}
	var cpu [2]time.Duration
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range reqs {
			k := (i + j) % 2 // the order alternates too
			start := threadCPU(b)
			for range 100 {
				one(reqs[k])
			}
			cpu[k] += threadCPU(b) - start
		}
	}
	pages := float64(b.N * 100)
	b.ReportMetric(float64(cpu[0].Nanoseconds())/1e3/pages, "none-cpu-µs")
	b.ReportMetric(float64(cpu[1].Nanoseconds())/1e3/pages, "rules5-cpu-µs")
	b.ReportMetric(float64((cpu[1]-cpu[0]).Nanoseconds())/1e3/pages, "rules5-cpu-µs-more")
}

func threadCPU(b *testing.B) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ts.Nano())
}
