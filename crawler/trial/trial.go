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
	"github.com/scrapycluster/scrapy-cluster-go/crawler/fingerprint"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/session"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
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
	// UnreadLinks counts the page's hrefs past those a crawl reads (4 ×
	// MAX_LINKS_PER_PAGE), which no list names: a crawl counts them as
	// refused:too_many_links.
	UnreadLinks int `json:"unread_links"`
}

// Refusal is a link not followed and why: off_domain, regex, extension,
// invalid_url, too_many_links (the crawl ledger's reasons) or maxdepth.
type Refusal struct {
	URL    string `json:"url"`
	Reason string `json:"reason"`
}

// Trier tries requests. It is safe for concurrent use.
type Trier struct {
	fetcher  *fetch.Fetcher
	extract  crawlspec.Extractor
	maxLinks int
}

// New returns a Trier fetching with cfg (fetch.ConfigFromSettings) whose
// spiders follow at most maxLinks links of a page (MAX_LINKS_PER_PAGE; 0:
// no limit), as a crawler's do.
func New(cfg fetch.Config, maxLinks int) *Trier {
	return &Trier{fetcher: fetch.New(cfg), maxLinks: maxLinks}
}

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
		MaxLinks: t.maxLinks,
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
	result.Refused, result.UnreadLinks, err = t.refused(result.Page, r, result.Followed)
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

// refused are the page's links that r's filters, its depth or the limit
// on a page's links (maxLinks) leave out, among those a crawl reads, and
// how many hrefs it does not read.
func (t *Trier) refused(p *spider.Page, r *crawlrequest.Request, followed []spider.Link) ([]Refusal, int, error) {
	out := []Refusal{}
	read, unread := links.ExtractUpTo(p.ResponseURL, p.Body, t.maxLinks*links.ScannedPerFollowed)
	if r.CurDepth >= r.MaxDepth {
		for _, l := range read {
			out = append(out, Refusal{URL: l.URL, Reason: RefusedMaxDepth})
		}
		return out, unread, nil
	}
	f, err := links.NewFilter(r)
	if err != nil {
		return out, unread, err
	}
	follows := make(map[string]bool, len(followed))
	for _, l := range followed {
		follows[l.URL] = true
	}
	for _, l := range read {
		if reason := f.Refusal(l.URL); reason != "" {
			out = append(out, Refusal{URL: l.URL, Reason: string(reason)})
		} else if !follows[fingerprint.Canonicalize(l.URL)] {
			out = append(out, Refusal{URL: l.URL, Reason: string(ledger.RefusedTooManyLinks)})
		}
	}
	return out, unread, nil
}
