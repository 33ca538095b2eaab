package e2e_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// fiveRules are the rules BenchmarkExtractionCost gives its crawl: one of
// each kind, and an attribute.
const fiveRules = `{"title": {"css": "title"}, "heading": {"xpath": "//h1"}, "links": {"css": "a", "attr": "href", "all": true},` +
	` "level": {"regex": "level (\\d+)"}, "ld": {"jsonld": true}}`

// BenchmarkExtractionCost: one crawler (default settings) crawls batches
// of 2,000 test-site pages, alternately without extract rules and with
// five (fiveRules), so both see the same machine; the crawler's CPU per
// page of each, and how much more the rules cost (extract-cpu-%).
func BenchmarkExtractionCost(b *testing.B) {
	const perBatch = 2000
	c := newCluster(b)
	var sites []*testsite.Site
	for i := 1; i <= 2; i++ {
		sites = append(sites, testsite.StartAt(b, fmt.Sprintf("127.0.0.%d:0", i), testsite.WithPages(250), testsite.WithMaxHits(1000)))
	}
	p := c.startCrawler(b, "crawler", with(benchSettings, "KAFKA_PRODUCER_BATCH_LINGER_MS", "25"))
	batch := 0
	run := func(rules string) time.Duration {
		batch++
		reqs := make([]*crawlrequest.Request, perBatch)
		for i := range reqs {
			site := sites[i%len(sites)]
			reqs[i] = crawl("link", site.URL("/page/"+strconv.Itoa(i/len(sites)%250+1)), "extract-"+strconv.Itoa(batch), 0)
			reqs[i].Attrs = json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`)
			if rules != "" {
				if err := reqs[i].SetExtra(crawlrequest.FieldExtract, json.RawMessage(rules)); err != nil {
					b.Fatal(err)
				}
			}
		}
		keys := c.queueAll(b, reqs)
		start := cpuTime(b, p.pid())
		c.announce(b, keys)
		c.countResults(b, perBatch, 120*time.Second)
		return cpuTime(b, p.pid()) - start
	}
	run("") // warm up
	run(fiveRules)
	b.ResetTimer()
	var none, five time.Duration
	for i := 0; i < b.N; i++ {
		none += run("")
		five += run(fiveRules)
	}
	pages := float64(b.N * perBatch)
	b.ReportMetric(float64(none.Microseconds())/pages, "none-cpu-µs/page")
	b.ReportMetric(float64(five.Microseconds())/pages, "rules5-cpu-µs/page")
	b.ReportMetric(100*(float64(five)/float64(none)-1), "extract-cpu-%")
}
