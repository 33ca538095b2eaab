package scraper_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/scraper"
)

// BenchmarkHandle queues one crawl request's writes on a pipeline (not
// sent) on its own: Handle, a Batch of one.
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

// BenchmarkBatchHandle queues crawl requests' writes as the monitor does,
// 250 on a pipeline (not sent) through one Batch: the plugin's own cost
// per request on the ingest path.
func BenchmarkBatchHandle(b *testing.B) {
	const perPipeline = 250
	h := &scraper.Handler{}
	reqs := make([]plugin.Request, perPipeline)
	for i := range reqs {
		reqs[i] = request(b, fmt.Sprintf(`{"url":"http://site%d.example.com/page/%d","appid":"benchapp","crawlid":"crawl%d","priority":%d,"maxdepth":1}`, i%50, i, i%10, 1+i%100))
	}
	pipe := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}).Pipeline()
	ctx := context.Background()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n += perPipeline
		batch := h.NewBatch()
		for _, req := range reqs {
			if _, err := batch.Handle(ctx, req, pipe); err != nil {
				b.Fatal(err)
			}
		}
		if err := batch.Flush(ctx, pipe); err != nil {
			b.Fatal(err)
		}
		pipe.Discard()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/request")
}
