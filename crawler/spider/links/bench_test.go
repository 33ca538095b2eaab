package links_test

import (
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/extract"
)

// shopPage is a page of about size bytes listing products: a link, an
// image and a price each.
func shopPage(size int) string {
	head := `<!DOCTYPE html><html><head><title>Shop</title></head><body><h1 class="name">Products</h1><ul id="items">`
	items := make([]string, 0, size/150)
	for n := len(head); n < size; {
		id := strconv.Itoa(len(items))
		item := `<li class="item"><a href="/product/` + id + `">Product ` + id + `</a> <img src="/img/` + id +
			`.png"><span class="price">` + id + `.99</span><p class="desc">A fine product with a long description.</p></li>`
		items = append(items, item)
		n += len(item)
	}
	return head + strings.Join(items, "") + "</ul></body></html>"
}

// processCPU is the CPU time of the process so far (its garbage
// collector's included): what a page costs, whatever else the machine runs.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLinksWithRules: a 200 KB page's links (Follow, at depth 0 of 1)
// and five extract rules, as the crawler reads a page of a crawl with
// rules (cpu-µs/op: the process's CPU time per page): "apart", the links from the tokenizer and the rules on their own
// parse (before spider.Response.ShareParse); "shared", both from one
// parse (the links from the tokens the rules' tree is built from).
func BenchmarkLinksWithRules(b *testing.B) {
	const pageURL = "http://shop.example/list"
	body := []byte(shopPage(200 << 10))
	rules, err := extract.CompileJSON([]byte(`{"title": {"css": "title"}, "heading": {"xpath": "//h1"}, "links": {"css": "a", "attr": "href", "all": true},` +
		` "price": {"regex": "(\\d+\\.99)"}, "ld": {"jsonld": true}}`))
	if err != nil {
		b.Fatal(err)
	}
	req := &crawlrequest.Request{URL: pageURL, MaxDepth: 1}
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "apart", true: "shared"}[shared]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start := processCPU(b)
			for range b.N {
				page := spider.NewPage(&spider.Response{Request: req, URL: pageURL, Status: 200, Body: body, ShareParse: shared,
					Header: http.Header{"Content-Type": {"text/html"}}})
				found, _, err := links.Follow(page, req)
				if err != nil || len(found) < 500 {
					b.Fatalf("%d links, %v", len(found), err)
				}
				var got map[string]any
				if shared {
					got = rules.ApplyDoc(page.Doc)
					page.Doc.Release()
				} else {
					got = rules.Apply(page.ResponseURL, page.Body)
				}
				if len(got) != 5 {
					b.Fatalf("%d fields", len(got))
				}
			}
			b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// treePage is a page as BenchmarkCrawlCost's test site serves one: about
// 750 bytes, ten links down the tree, one to the home page, one repeated
// and one fragment.
func treePage(host string) string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Page 3</title></head>
<body id="top">
<h1>Page 3</h1>
<p>A tree page at level 1.</p>
<ul>
<li><a href="` + host + `/">` + host + `/</a></li>
`)
	for i := 1; i <= 10; i++ {
		b.WriteString(`<li><a href="/page/3/` + strconv.Itoa(i) + `">/page/3/` + strconv.Itoa(i) + "</a></li>\n")
	}
	b.WriteString("<li><a href=\"/page/3/1\">/page/3/1</a></li>\n<li><a href=\"#top\">#top</a></li>\n</ul>\n</body></html>")
	return b.String()
}

// BenchmarkFollowSmallPage: the link spider's work on a page of
// BenchmarkCrawlCost (NewPage, then Follow with its allow_regex), per page.
func BenchmarkFollowSmallPage(b *testing.B) {
	const host = "http://127.0.0.1:8080"
	body := []byte(treePage(host))
	req := &crawlrequest.Request{URL: host + "/page/3", MaxDepth: 3, AllowRegex: []string{"/page/"}}
	header := http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Content-Length": {"747"},
		"Date": {"Sat, 28 Nov 2026 20:41:10 GMT"}}
	sent := http.Header{"User-Agent": {"Scrapy/1.0"}, "Accept": {"text/html"}, "Accept-Language": {"en"},
		"Accept-Encoding": {"gzip,deflate"}}
	b.ReportAllocs()
	start := processCPU(b)
	for range b.N {
		page := spider.NewPage(&spider.Response{Request: req, URL: req.URL, Status: 200, StatusText: "OK", Body: body,
			Header: header, RequestHeader: sent})
		found, _, err := links.Follow(page, req)
		if err != nil || len(found) != 11 { // ten children and the page itself (#top)
			b.Fatalf("%d links, %v", len(found), err)
		}
	}
	b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
}
