// Package link is the "link" spider, the original's LinkSpider: it
// publishes every response as a crawl result and, while the request is
// shallower than its maxdepth, follows every link the crawl's filters
// allow.
//
// Behaviour, as the original's:
//   - One Page per response, whatever its status (4xx/5xx pages included).
//   - When curdepth < maxdepth, the links passing the request's filters
//     (allowed_domains, allow_regex, deny_regex, deny_extensions; see
//     package links) are the Page's links ({"url", "text"}, the followed
//     links only, canonical URLs) and each becomes a request for the same
//     crawl and spider, priority 10 lower and curdepth one higher
//     (crawlrequest.Request.Follow). At maxdepth the Page's links are [].
//   - Duplicates across pages are left to the scheduler's duplicate filter.
//
// Differences: status_msg is the real reason phrase (the original always
// wrote "OK"); an invalid allow_regex or deny_regex is returned as an error
// with the page still published and nothing followed (the original's spider
// raised and lost the page); non-markup responses have no links.
package link

import (
	"context"
	"fmt"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// Name is the spider's name and the spiderid of its requests.
const Name = "link"

func init() { spider.Register(Name, func() spider.Spider { return Spider{} }) }

// Spider is the link spider. It holds no state and is safe for concurrent use.
type Spider struct{}

// Name returns "link".
func (Spider) Name() string { return Name }

// Parse publishes the response and follows its links while the crawl is
// shallower than its maxdepth.
func (Spider) Parse(_ context.Context, resp *spider.Response) (spider.Output, error) {
	page := spider.NewPage(resp)
	out := spider.Output{Pages: []*spider.Page{page}}
	req := resp.Request
	if req == nil || req.CurDepth >= req.MaxDepth {
		return out, nil
	}
	found, refused, err := links.Follow(page, req)
	if err != nil {
		return out, fmt.Errorf("links of %s: %w", page.ResponseURL, err)
	}
	page.Links, out.Refused = found, refused
	out.Requests = make([]*crawlrequest.Request, 0, len(found))
	for _, l := range found {
		out.Requests = append(out.Requests, req.Follow(l.URL))
	}
	return out, nil
}
