package action_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/action"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// request builds a request the way the monitor does.
func request(t *testing.T, raw string) plugin.Request {
	t.Helper()
	return plugintest.Request(t, action.Handler{}, raw)
}

// handle runs Handle on one pipeline and executes it, as the monitor does.
func handle(t *testing.T, c *redis.Client, req plugin.Request) {
	t.Helper()
	if err := plugintest.Handle(t, action.Handler{}, c, req); err != nil {
		t.Fatalf("Handle: %v", err)
	}
}

// stringKeys returns every key in Redis with its string value.
func stringKeys(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	return plugintest.StringKeys(t, c)
}

func TestHandleWritesTheUUIDAtTheActionKey(t *testing.T) {
	r := harness.StartRedis(t)
	c := r.TestClient(t)
	for _, tc := range []struct {
		name, raw string
		want      map[string]string
	}{
		{"info about all of an app's crawls",
			`{"action":"info","appid":"testapp","uuid":"someuuid","spiderid":"link"}`,
			map[string]string{"info:link:testapp": "someuuid"}},
		{"info about one crawl",
			`{"action":"info","appid":"testapp","uuid":"someuuid","spiderid":"link","crawlid":"crawl1"}`,
			map[string]string{"info:link:testapp:crawl1": "someuuid"}},
		{"stop one crawl",
			`{"action":"stop","appid":"testapp","uuid":"u-42","spiderid":"link","crawlid":"crawl1"}`,
			map[string]string{"stop:link:testapp:crawl1": "u-42"}},
		{"stop all of an app's crawls of another spider",
			`{"action":"stop","appid":"testapp","uuid":"u-42","spiderid":"wandering"}`,
			map[string]string{"stop:wandering:testapp": "u-42"}},
		{"non-ASCII ids kept as given",
			`{"action":"info","appid":"app😀","uuid":"ü","spiderid":"","crawlid":"c:1"}`,
			map[string]string{"info::app😀:c:1": "ü"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.FlushAll(context.Background()); err != nil {
				t.Fatal(err)
			}
			handle(t, c, request(t, tc.raw))
			if got := stringKeys(t, c); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Redis holds %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHandleTwiceLeavesTheSameState(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	req := request(t, `{"action":"stop","appid":"testapp","uuid":"someuuid","spiderid":"link","crawlid":"crawl1"}`)
	handle(t, c, req)
	first := stringKeys(t, c)
	handle(t, c, req)
	if second := stringKeys(t, c); !reflect.DeepEqual(first, second) || len(first) != 1 {
		t.Errorf("after a repeated Handle Redis holds %v, want %v (one key)", second, first)
	}
}
