package e2e_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// TestRulesLeaveTheLinksAsTheyAre: a crawl with extract rules that read
// the page's tree (whose links the crawler then reads from the tokens that
// tree is built from) publishes and follows the same links, in the same
// order, as the same crawl without rules, on every page of the test site
// two levels deep; and its pages carry the rules' values.
func TestRulesLeaveTheLinksAsTheyAre(t *testing.T) {
	c := newCluster(t)
	site := testsite.Start(t)
	plain := crawl("link", site.URL("/"), "plain", 2)
	ruled := crawl("link", site.URL("/"), "ruled", 2)
	if err := ruled.SetExtra(crawlrequest.FieldExtract, json.RawMessage(fiveRules)); err != nil {
		t.Fatal(err)
	}
	want := testsite.Reachable(plain.URL, 2, notFile, site)
	c.startCrawler(t, "crawler", benchSettings)
	c.seed(t, plain, ruled)
	c.resultsFor(t, "plain", want, 120*time.Second)
	c.resultsFor(t, "ruled", want, 120*time.Second)
	byCrawl := map[string]map[string]*spider.Page{"plain": {}, "ruled": {}}
	for _, p := range c.read {
		if pages, ok := byCrawl[p.CrawlID]; ok {
			pages[p.URL] = p
		}
	}
	withLinks := 0
	for _, u := range want {
		p, r := byCrawl["plain"][u], byCrawl["ruled"][u]
		if !reflect.DeepEqual(p.Links, r.Links) {
			t.Errorf("%s: links with rules\n%v\nwithout\n%v", u, r.Links, p.Links)
		}
		if len(r.Links) > 0 {
			withLinks++
		}
	}
	extracted := c.extracted(t, "ruled", len(c.read))
	for _, u := range want {
		if x := extracted[u]; byCrawl["ruled"][u].StatusCode == 200 && (x["title"] == nil || x["heading"] == nil) {
			t.Errorf("%s: extracted %v, want its title and heading", u, x)
		}
	}
	if withLinks < len(want)/2 {
		t.Errorf("%d of %d pages with links: the test compares too little", withLinks, len(want))
	}
}

// extracted reads the first n results of the firehose again and returns
// the extracted field of those of crawlID, by URL.
func (c *cluster) extracted(tb testing.TB, crawlID string, n int) map[string]map[string]any {
	tb.Helper()
	cfg := c.kafkaConfig()
	r, err := cfg.NewPartitionReader(cfg.Topic("crawled_firehose"), 0, kafka.FirstOffset)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := map[string]map[string]any{}
	for range n {
		msg, err := r.ReadMessage(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		var m struct {
			URL       string         `json:"url"`
			CrawlID   string         `json:"crawlid"`
			Extracted map[string]any `json:"extracted"`
		}
		if err := json.Unmarshal(msg.Value, &m); err != nil {
			tb.Fatal(err)
		}
		if m.CrawlID == crawlID {
			out[m.URL] = m.Extracted
		}
	}
	return out
}
