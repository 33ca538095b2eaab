// Package myspider is an example of a custom spider, the Go version of the
// spec's "MySpider" outline: it publishes every page with its <title> in
// an extra "title" field of the crawl result, and follows nothing.
//
// A spider is a type with Name and Parse, registered by name in init().
// To run it, build a crawler whose main imports this package (and
// spiders/all for the built-in ones) and start it with --spider myspider;
// crawl requests with "spiderid": "myspider" are queued for it.
package myspider

import (
	"context"
	"strings"

	"golang.org/x/net/html"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
)

// Name is the spider's name: the spiderid of its requests and its queues
// (myspider:<domain>:queue).
const Name = "myspider"

func init() {
	spider.Register(Name, func() spider.Spider { return Spider{} })
}

// Spider records page titles.
type Spider struct{}

// Name returns "myspider".
func (Spider) Name() string { return Name }

// Parse returns the response's crawl result with its title.
func (Spider) Parse(_ context.Context, resp *spider.Response) (spider.Output, error) {
	page := spider.NewPage(resp) // the standard fields, as every spider's results have them
	page.Extra = map[string]any{"title": Title(page.Body)}
	// To follow links as well: found, refused, err := links.Follow(page, resp.Request),
	// then add resp.Request.Follow(link.URL) for each to Output.Requests
	// (and refused to Output.Refused, for the crawl's ledger).
	return spider.Output{Pages: []*spider.Page{page}}, nil
}

// Title returns the text of a document's first <title>, white space
// collapsed ("" without one).
func Title(doc string) string {
	z := html.NewTokenizer(strings.NewReader(doc))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken:
			if name, _ := z.TagName(); string(name) == "title" {
				if z.Next() == html.TextToken {
					return strings.Join(strings.Fields(string(z.Text())), " ")
				}
				return ""
			}
		}
	}
}
