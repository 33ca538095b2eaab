package engine_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/ledger"
)

// flooding is a spider that builds its own follow-up requests, without
// links.Follow: floodingRequests of them for every page above the crawl's
// maxdepth, to the test site's tree pages.
type flooding struct{}

const floodingRequests = 40

func (flooding) Name() string { return "flooding" }
func (flooding) Parse(_ context.Context, resp *spider.Response) (spider.Output, error) {
	out := spider.Output{Pages: []*spider.Page{spider.NewPage(resp)}}
	if resp.Request.CurDepth >= resp.Request.MaxDepth {
		return out, nil
	}
	for i := range floodingRequests {
		out.Requests = append(out.Requests, resp.Request.Follow(resp.URL+"page/1/"+strconv.Itoa(i)))
	}
	return out, nil
}

func init() { spider.Register("flooding", func() spider.Spider { return flooding{} }) }

// A spider that builds more follow-up requests than MAX_LINKS_PER_PAGE
// gets its first ones queued, as links.Follow's links are, and the rest
// counted refused:too_many_links, with a warning.
func TestASpiderBuildingTooManyRequestsIsHeldToMaxLinks(t *testing.T) {
	e := newEnv(t, map[string]string{"SPIDER": "flooding", "MAX_LINKS_PER_PAGE": "7"})
	seed := crawl(e.site.URL("/"), "flood", 1)
	seed.SpiderID = "flooding"
	e.seedCounted(t, seed)
	c := ledger.Crawl{SpiderID: "flooding", AppID: seed.AppID, CrawlID: seed.CrawlID}
	p := e.ledgerUntil(t, c, "the crawl's ledger to count every page done", func(p *ledger.Progress) bool { return p.Done > 0 && p.Outstanding() == 0 })
	// The seed's 7 requests are at depth 1, the crawl's maxdepth: they make
	// none.
	if p.Published != 8 || p.Enqueued != 7 || p.Refused[string(ledger.RefusedTooManyLinks)] != floodingRequests-7 {
		t.Fatalf("ledger %+v; want 8 published, 7 enqueued and %d refused:too_many_links", p, floodingRequests-7)
	}
	line := e.logLine(t, "The spider made more follow-up requests than MAX_LINKS_PER_PAGE")
	if line["requests"] != float64(floodingRequests) || line["followed"] != float64(7) {
		t.Fatalf("log line %v", line)
	}
}
