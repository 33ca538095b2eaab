package links

import (
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// FromDoc is the links of the tokens of the page's Doc (Follow's first
// way), false when they are not read, for the test that compares them with
// Extract's.
func FromDoc(page *spider.Page) ([]spider.Link, bool) {
	got, _, ok := fromDoc(page, 0)
	if !ok {
		return nil, false
	}
	return linksOf(got), true
}

// InertRunMax is the longest inert run read whole.
const InertRunMax = inertRunMax

// CachedFilter is the Filter Follow uses for r (from its cache).
func CachedFilter(r *crawlrequest.Request) (*Filter, error) { return cachedFilter(r) }
