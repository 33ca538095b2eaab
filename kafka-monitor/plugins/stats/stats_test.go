package stats_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/stats"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// request builds a request the way the monitor does: decode, then the
// first (here: only) plugin whose schema accepts it, with defaults filled.
func request(t *testing.T, raw string) plugin.Request {
	t.Helper()
	plugins, err := plugin.Load(map[string]any{stats.Key: 300})
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := plugin.DecodeJSON([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	p, req, errs := plugin.Match(plugins, decoded)
	if p == nil {
		t.Fatalf("schema rejects %s: %v", raw, errs)
	}
	return req
}

// handle runs Handle on one pipeline and executes it, as the monitor does.
func handle(t *testing.T, c *redis.Client, req plugin.Request) {
	t.Helper()
	ctx := context.Background()
	pipe := c.Pipeline()
	if _, err := (stats.Handler{}).Handle(ctx, req, pipe); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("exec: %v", err)
	}
}

// stringKeys returns every key in Redis with its string value.
func stringKeys(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, k := range c.Keys(ctx, "*").Val() {
		v, err := c.Get(ctx, k).Result()
		if err != nil {
			t.Fatalf("GET %s: %v", k, err)
		}
		out[k] = v
	}
	return out
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
