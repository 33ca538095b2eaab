// Package crawlspec is what a crawl request asks of the crawler beyond its
// URL, in the form the fetcher and the spiders' pages take it: the fetch
// request its method, body, headers, user agent and cookie make
// (FetchRequest), and its extract rules applied to its pages (Extractor).
// The crawler's engine and the REST service's /try share it, so that a
// tried request is fetched and extracted exactly as a crawled one.
package crawlspec

import (
	"fmt"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/extract"
)

// ExtractedField is the crawl result's field of the extracted values.
const ExtractedField = "extracted"

// FetchRequest is the fetch request of r: its URL, useragent and cookie,
// and its method, body and headers (crawlrequest.Request.Shape). When
// those cannot be read (a member no Kafka Monitor of ours checked, such
// as one an original crawler queued with Scrapy's own method and headers)
// the request is a plain GET and err says why; the shape's Session stands
// whatever else is wrong.
func FetchRequest(r *crawlrequest.Request) (fetch.Request, crawlrequest.Shape, error) {
	req := fetch.Request{URL: r.URL, UserAgent: r.UserAgent, Cookie: r.Cookie}
	shape, err := r.Shape()
	if err != nil {
		return req, crawlrequest.Shape{Method: "GET", Session: shape.Session}, fmt.Errorf("request's shape ignored: %w", err)
	}
	req.Method, req.Header = shape.Method, shape.Header
	if shape.Body != "" {
		req.Body = []byte(shape.Body)
	}
	return req, shape, nil
}

// Extractor applies crawls' extract rules, each crawl's compiled once per
// process. The zero value is ready; it is safe for concurrent use.
type Extractor struct {
	cache extract.Cache
}

// Rules are r's extract rules (nil when it has none), compiled once.
func (x *Extractor) Rules(r *crawlrequest.Request) (*extract.Rules, error) {
	raw, ok := r.ExtraText(crawlrequest.FieldExtract)
	if !ok || raw == "null" {
		return nil, nil
	}
	return x.cache.Get(raw)
}

// Apply gives each page the extracted field: rules' values on the page's
// final URL and text ({} when no rule applies there), read from the page's
// Doc when it has one of that URL and text, as an extract.Values (the
// values already in the JSON the result is written in: no map of them is
// built). Pages of requests without rules are left as they are. Either way
// the pages' Docs are released.
func Apply(rules *extract.Rules, pages []*spider.Page) {
	for _, p := range pages {
		if rules == nil {
			release(p)
			continue
		}
		var got extract.Values
		if p.Doc != nil && p.Doc.Of(p.ResponseURL, p.Body) {
			got = rules.ApplyDocJSON(p.Doc)
		} else {
			got = rules.ApplyJSON(p.ResponseURL, p.Body)
		}
		release(p)
		if p.Extra == nil {
			p.Extra = map[string]any{}
		}
		p.Extra[ExtractedField] = got
	}
}

// release gives the memory of the page's Doc back: its links and values
// are read.
func release(p *spider.Page) {
	if p.Doc != nil {
		p.Doc.Release()
		p.Doc = nil
	}
}

// ShareParse reports whether a response to r fetched from finalURL is to
// be parsed once for its links and its rules (spider.Response.ShareParse):
// when r's rules read the tree of that page.
func (x *Extractor) ShareParse(r *crawlrequest.Request, finalURL string) bool {
	rules, err := x.Rules(r)
	return err == nil && rules.ReadsTree(finalURL)
}
