// Package spider is the crawler's extension point: a Spider turns a fetched
// page into crawl results (Pages, published to Kafka) and follow-up
// requests (queued in Redis), as a Scrapy spider's parse does in the
// original. Spiders register by name in init(); a crawler process serves
// the spider named by its --spider flag (the requests' spiderid), and a
// spider may queue requests for another spider type by setting their
// SpiderID.
//
// To add a spider, write a type implementing Spider, register it, and build
// your own crawler main that imports your package (see examples/myspider).
package spider

import (
	"context"
	"net/http"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/registry"
)

// Spider parses fetched pages.
type Spider interface {
	// Name is the spider type, the spiderid of the requests it serves
	// ("link"): its queues are <name>:<domain>:queue.
	Name() string
	// Parse handles one response. Every response is parsed, whatever its
	// status (4xx and 5xx pages are crawl results too, as in the original).
	// Parse must not fail on malformed or hostile content; an error is
	// logged and counted, and the page is still published when Output has it.
	Parse(ctx context.Context, resp *Response) (Output, error)
}

// Response is a fetched page.
type Response struct {
	// Request is the crawl request that was fetched.
	Request *crawlrequest.Request
	// URL is the final URL after redirects (the result's response_url).
	URL string
	// Status and StatusText are the HTTP status ("404", "Not Found").
	Status     int
	StatusText string
	// Header is the response's headers; RequestHeader the headers sent.
	Header        http.Header
	RequestHeader http.Header
	// Body is the (decompressed) body, cut at the maximum body size. It
	// is never changed once fetched: Text, and the Page built from it,
	// share its memory.
	Body []byte
	// Truncated reports that Body was cut at the maximum body size.
	Truncated bool
	// ShareParse asks NewPage for a Page whose Doc shares one parse of
	// the text between its links and the crawl's extract rules (set by the
	// engine when the rules read the page's tree).
	ShareParse bool
	// MaxLinks is the most links of the page a spider follows
	// (MAX_LINKS_PER_PAGE, set by the engine; links.Follow keeps to it
	// and counts the rest); 0: no limit.
	MaxLinks int
}

// Output is what a spider makes of a response.
type Output struct {
	// Pages are published to the crawled topics, in order.
	Pages []*Page
	// Requests are queued (after the duplicate filter and the crawl's limits).
	Requests []*crawlrequest.Request
	// Refused counts the links the spider chose not to follow, by reason
	// (ledger.RefusedOffDomain, RefusedRegex, RefusedExtension,
	// RefusedInvalidURL, RefusedTooManyLinks: what links.Follow returns
	// beside the links). They
	// are counted in the crawl's ledger with the page's requests. Optional:
	// a spider that leaves it nil still works; its left-out links are just
	// not counted.
	Refused map[ledger.Reason]int
}

var spiders = registry.New[Spider]("spider")

// Register makes a spider available under its name. It panics if the name is taken.
func Register(name string, factory func() Spider) { spiders.Register(name, factory) }

// Registered returns the registered spider names, sorted.
func Registered() []string { return spiders.Names() }

// New returns a new instance of the named spider.
func New(name string) (Spider, error) { return spiders.New(name) }
