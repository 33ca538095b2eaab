package scraper_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/scraper"
)

// BenchmarkHandle queues one crawl request's writes on a pipeline (not
// sent): the plugin's own cost per request on the ingest path.
func BenchmarkHandle(b *testing.B) {
	h := &scraper.Handler{}
	req := request(b, `{"url":"http://d1.example.com/page/1","appid":"testapp","crawlid":"big","maxdepth":2,"expires":1893456000}`)
	pipe := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}).Pipeline()
	ctx := context.Background()
	for b.Loop() {
		if _, err := h.Handle(ctx, req, pipe); err != nil {
			b.Fatal(err)
		}
		pipe.Discard()
	}
}
