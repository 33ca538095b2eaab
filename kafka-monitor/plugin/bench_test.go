package plugin_test

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
)

// BenchmarkValidateCrawlRequest measures the verdict on one crawl request
// (Validate: decoding, the default plugins' schemas, its defaults filled
// in, the scraper's Validator).
func BenchmarkValidateCrawlRequest(b *testing.B) {
	plugins, err := plugin.Load(plugin.Plugins.Default())
	if err != nil {
		b.Fatal(err)
	}
	raw := []byte(`{"url": "http://www.dmoz.org/", "appid":"testapp", "crawlid":"abc123", "maxdepth":2, "priority":90, "allowed_domains": ["dmoz.org"], "attrs": {"k": "v"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := plugin.Validate(plugins, raw); err != nil {
			b.Fatal(err)
		}
	}
}
