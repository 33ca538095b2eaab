package wirejson_test

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// BenchmarkDecode reads a crawl request as the Kafka Monitor does, once per
// request (see the package doc).
func BenchmarkDecode(b *testing.B) {
	raw := []byte(`{"url": "http://www.dmoz.org/", "appid":"testapp", "crawlid":"abc123", "maxdepth":2, "priority":90, "allowed_domains": ["dmoz.org"], "attrs": {"k": "v"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wirejson.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}
