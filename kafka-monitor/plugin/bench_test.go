package plugin_test

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
)

// BenchmarkValidateCrawlRequest measures decoding and validating one crawl
// request against the default plugins and filling its defaults.
func BenchmarkValidateCrawlRequest(b *testing.B) {
	plugins, err := plugin.Load(plugin.Defaults()["PLUGINS"].(map[string]any))
	if err != nil {
		b.Fatal(err)
	}
	raw := []byte(`{"url": "http://www.dmoz.org/", "appid":"testapp", "crawlid":"abc123", "maxdepth":2, "priority":90, "allowed_domains": ["dmoz.org"], "attrs": {"k": "v"}}`)
	b.ReportAllocs()
	for b.Loop() {
		v, err := plugin.DecodeJSON(raw)
		if err != nil {
			b.Fatal(err)
		}
		if p, _, _ := plugin.Match(plugins, v); p == nil {
			b.Fatal("no plugin matched")
		}
	}
}
