package stats_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/stats"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// request builds a request the way the monitor does.
func request(t *testing.T, raw string) plugin.Request {
	t.Helper()
	return plugintest.Request(t, stats.Handler{}, raw)
}

// handle runs Handle on one pipeline and executes it, as the monitor does.
func handle(t *testing.T, c *redis.Client, req plugin.Request) {
	t.Helper()
	if err := plugintest.Handle(t, stats.Handler{}, c, req); err != nil {
		t.Fatalf("Handle: %v", err)
	}
}

// stringKeys returns every key in Redis with its string value.
func stringKeys(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	return plugintest.StringKeys(t, c)
}

func TestHandleWritesTheUUIDAtTheStatsRequestKey(t *testing.T) {
	r := harness.StartRedis(t)
	c := r.TestClient(t)
	cases := []struct{ name, raw, key string }{
		{"stats defaults to all", `{"appid":"testapp","uuid":"someuuid"}`, "statsrequest:all:testapp"},
	}
	for _, s := range []string{"kafka-monitor", "redis-monitor", "crawler", "spider", "machine", "queue", "rest", "all"} {
		cases = append(cases, struct{ name, raw, key string }{
			s, `{"stats":"` + s + `","appid":"testapp","uuid":"someuuid"}`, "statsrequest:" + s + ":testapp"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.FlushAll(context.Background()); err != nil {
				t.Fatal(err)
			}
			handle(t, c, request(t, tc.raw))
			if got, want := stringKeys(t, c), map[string]string{tc.key: "someuuid"}; !reflect.DeepEqual(got, want) {
				t.Errorf("Redis holds %v, want %v", got, want)
			}
		})
	}
}

func TestHandleTwiceLeavesTheSameState(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	req := request(t, `{"stats":"queue","appid":"testapp","uuid":"someuuid"}`)
	handle(t, c, req)
	first := stringKeys(t, c)
	handle(t, c, req)
	if second := stringKeys(t, c); !reflect.DeepEqual(first, second) || len(first) != 1 {
		t.Errorf("after a repeated Handle Redis holds %v, want %v (one key)", second, first)
	}
}
