package action_test

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/action"
)

func TestHandleWritesTheUUIDAtTheActionKey(t *testing.T) {
	plugintest.ExpectWrites(t, action.Handler(), []plugintest.Write{
		{Name: "info about all of an app's crawls",
			Raw:  `{"action":"info","appid":"testapp","uuid":"someuuid","spiderid":"link"}`,
			Want: map[string]string{"info:link:testapp": "someuuid"}},
		{Name: "info about one crawl",
			Raw:  `{"action":"info","appid":"testapp","uuid":"someuuid","spiderid":"link","crawlid":"crawl1"}`,
			Want: map[string]string{"info:link:testapp:crawl1": "someuuid"}},
		{Name: "stop one crawl",
			Raw:  `{"action":"stop","appid":"testapp","uuid":"u-42","spiderid":"link","crawlid":"crawl1"}`,
			Want: map[string]string{"stop:link:testapp:crawl1": "u-42"}},
		{Name: "stop all of an app's crawls of another spider",
			Raw:  `{"action":"stop","appid":"testapp","uuid":"u-42","spiderid":"wandering"}`,
			Want: map[string]string{"stop:wandering:testapp": "u-42"}},
		{Name: "non-ASCII ids kept as given",
			Raw:  `{"action":"info","appid":"app😀","uuid":"ü","spiderid":"","crawlid":"c:1"}`,
			Want: map[string]string{"info::app😀:c:1": "ü"}},
	})
}

func TestHandleTwiceLeavesTheSameState(t *testing.T) {
	plugintest.ExpectIdempotent(t, action.Handler(), `{"action":"stop","appid":"testapp","uuid":"someuuid","spiderid":"link","crawlid":"crawl1"}`)
}
