package fetch_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fetch"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
)

// BenchmarkFetchSmallPage fetches a small page (about 600 bytes) from the
// loopback test site with 16 goroutines over keep-alive connections; the
// site runs in the same process and shares its CPUs.
func BenchmarkFetchSmallPage(b *testing.B) {
	site := testsite.Start(b, testsite.WithMaxHits(1000))
	f := fetch.New(quick(func(c *fetch.Config) { c.MaxConnsPerHost = 16 }))
	b.Cleanup(f.Close)
	url := site.URL("/page/1")
	if _, err := f.Fetch(context.Background(), fetch.Request{URL: url}); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := f.Fetch(context.Background(), fetch.Request{URL: url})
			if err != nil || res.Status != 200 {
				b.Errorf("fetch: %v", err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fetches/s")
}
