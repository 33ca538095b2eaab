// Package trial fetches one crawl request exactly as a crawler would and
// says what the cluster would make of it, without queueing or counting
// anything: the REST service's POST /try.
//
// The fetch is the crawler's own (package fetch: the same address guard,
// robots.txt, size and time limits, from the same FETCH_*, DOWNLOAD_* and
// ROBOTSTXT_* settings), the request's shape and extract rules are read
// by package crawlspec as the engine reads them, and the page is parsed
// by the spider the request names. A "session": true request gets a jar
// of its own for the one fetch (its redirects keep cookies), never the
// crawl's jar in Redis.
package trial

import (
	"context"
	"fmt"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/crawlspec"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/session"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// RefusedMaxDepth is the reason of links not followed because the request
// is already at its maxdepth.
const RefusedMaxDepth = "maxdepth"

// Result is what the cluster would make of a request.
type Result struct {
	// Page is the crawl result that would be published (with "extracted"
	// when the request has rules).
	Page *spider.Page `json:"result"`
	// Followed are the links that would be queued; Refused those that
	// would not, each with its reason.
	Followed []spider.Link `json:"followed"`
	Refused  []Refusal     `json:"refused"`
}

// Refusal is a link not followed and why: off_domain, regex, extension,
// invalid_url (the crawl ledger's reasons) or maxdepth.
type Refusal struct {
	URL    string `json:"url"`
	Reason string `json:"reason"`
}

// Trier tries requests. It is safe for concurrent use.
type Trier struct {
	fetcher *fetch.Fetcher
	extract crawlspec.Extractor
}

// New returns a Trier fetching with cfg (fetch.ConfigFromSettings).
func New(cfg fetch.Config) *Trier { return &Trier{fetcher: fetch.New(cfg)} }

// Close releases the fetcher's connections.
func (t *Trier) Close() { t.fetcher.Close() }

// Try fetches r and parses it with the spider r names. The error is the
// fetch's when no page was had (fetch.DropReason names a refusal, such
// as "private_address"), or says why r cannot be tried.
func (t *Trier) Try(ctx context.Context, r *crawlrequest.Request) (*Result, error) {
	sp, err := spider.New(r.SpiderID)
	if err != nil {
		return nil, fmt.Errorf("spiderid: %w", err)
	}
	rules, err := t.extract.Rules(r)
	if err != nil {
		return nil, err
	}
	freq, shape, err := crawlspec.FetchRequest(r)
	if err != nil {
		return nil, err
	}
	if shape.Session {
		freq.Jar = session.NewJar(session.Crawl{AppID: r.AppID, CrawlID: r.CrawlID})
	}
	res, err := t.fetcher.Fetch(ctx, freq)
	if err != nil {
		return nil, err
	}
	out, err := sp.Parse(ctx, &spider.Response{
		Request: r, URL: res.URL, Status: res.Status, StatusText: res.StatusText,
		Header: res.Header, RequestHeader: res.RequestHeader, Body: res.Body, Truncated: res.Truncated,
	})
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", res.URL, err)
	}
	if len(out.Pages) == 0 {
		return nil, fmt.Errorf("the spider made no result of %s", res.URL)
	}
	crawlspec.Apply(rules, out.Pages)
	result := &Result{Page: out.Pages[0], Followed: []spider.Link{}, Refused: []Refusal{}}
	result.Page.RawBody = nil
	for _, q := range out.Requests {
		result.Followed = append(result.Followed, spider.Link{URL: q.URL, Text: linkText(result.Page, q.URL)})
	}
	result.Refused, err = refused(result.Page, r)
	return result, err
}

// linkText is the text of the page's link to u, if it lists one.
func linkText(p *spider.Page, u string) string {
	for _, l := range p.Links {
		if l.URL == u {
			return l.Text
		}
	}
	return ""
}

// refused are the page's links r's filters, or its depth, leave out.
func refused(p *spider.Page, r *crawlrequest.Request) ([]Refusal, error) {
	out := []Refusal{}
	all := links.Extract(p.ResponseURL, p.Body)
	if r.CurDepth >= r.MaxDepth {
		for _, l := range all {
			out = append(out, Refusal{URL: l.URL, Reason: RefusedMaxDepth})
		}
		return out, nil
	}
	f, err := links.NewFilter(r)
	if err != nil {
		return out, err
	}
	for _, l := range all {
		if reason := f.Refusal(l.URL); reason != "" {
			out = append(out, Refusal{URL: l.URL, Reason: string(reason)})
		}
	}
	return out, nil
}
