package engine

import (
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/recrawl"
)

// markRun adds to the results of a scheduled crawl's request the run it
// belongs to ("run": 1, 2, ...; see scutils/recrawl).
func markRun(req *crawlrequest.Request, pages []*spider.Page) {
	_, run, ok := recrawl.Of(req)
	if !ok {
		return
	}
	for _, p := range pages {
		if p.Extra == nil {
			p.Extra = map[string]any{}
		}
		p.Extra[recrawl.FieldRun] = run
	}
}
