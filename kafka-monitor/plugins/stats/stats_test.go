package stats_test

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/stats"
)

func TestHandleWritesTheUUIDAtTheStatsRequestKey(t *testing.T) {
	cases := []plugintest.Write{
		{Name: "stats defaults to all", Raw: `{"appid":"testapp","uuid":"someuuid"}`, Want: map[string]string{"statsrequest:all:testapp": "someuuid"}},
	}
	for _, s := range []string{"kafka-monitor", "redis-monitor", "crawler", "spider", "machine", "queue", "rest", "all"} {
		cases = append(cases, plugintest.Write{
			Name: s, Raw: `{"stats":"` + s + `","appid":"testapp","uuid":"someuuid"}`, Want: map[string]string{"statsrequest:" + s + ":testapp": "someuuid"}})
	}
	plugintest.ExpectWrites(t, stats.Handler(), cases)
}

func TestHandleTwiceLeavesTheSameState(t *testing.T) {
	plugintest.ExpectIdempotent(t, stats.Handler(), `{"stats":"queue","appid":"testapp","uuid":"someuuid"}`)
}
