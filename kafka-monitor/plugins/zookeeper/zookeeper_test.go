package zookeeper_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin/plugintest"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/zookeeper"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// request builds a request the way the monitor does.
func request(t *testing.T, raw string) plugin.Request {
	t.Helper()
	return plugintest.Request(t, zookeeper.Handler{}, raw)
}

// handle runs Handle on one pipeline and executes it, as the monitor does.
func handle(t *testing.T, c *redis.Client, req plugin.Request) error {
	t.Helper()
	return plugintest.Handle(t, zookeeper.Handler{}, c, req)
}

// stringKeys returns every key in Redis with its string value.
func stringKeys(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	return plugintest.StringKeys(t, c)
}

// decodeNumbers decodes a JSON object keeping numbers as written.
func decodeNumbers(t *testing.T, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return m
}

func TestHandleWritesTheChangeAsJSONAtTheZKKey(t *testing.T) {
	r := harness.StartRedis(t)
	c := r.TestClient(t)
	const who = `"uuid":"someuuid","appid":"testapp","domain":"example.com"`
	for _, tc := range []struct {
		name, raw, key, value string
	}{
		{"domain-update with hits, window and scale",
			`{` + who + `,"action":"domain-update","hits":10,"window":60,"scale":0.5}`,
			"zk:domain-update:example.com:testapp",
			`{"domain":"example.com","uuid":"someuuid","hits":10,"window":60,"scale":0.5}`},
		{"domain-update with the default scale 1.0",
			`{` + who + `,"action":"domain-update","hits":10,"window":60}`,
			"zk:domain-update:example.com:testapp",
			`{"domain":"example.com","uuid":"someuuid","hits":10,"window":60,"scale":1.0}`},
		{"domain-update with negative hits (only zero is refused)",
			`{` + who + `,"action":"domain-update","hits":-5,"window":60,"scale":0}`,
			"zk:domain-update:example.com:testapp",
			`{"domain":"example.com","uuid":"someuuid","hits":-5,"window":60,"scale":0}`},
		{"domain-remove ignores hits and window",
			`{` + who + `,"action":"domain-remove","hits":10,"window":60}`,
			"zk:domain-remove:example.com:testapp",
			`{"domain":"example.com","uuid":"someuuid"}`},
		{"blacklist-update",
			`{` + who + `,"action":"blacklist-update"}`,
			"zk:blacklist-update:example.com:testapp",
			`{"domain":"example.com","uuid":"someuuid"}`},
		{"blacklist-remove",
			`{"uuid":"u2","appid":"otherapp","domain":"www.example.co.uk","action":"blacklist-remove","scale":0.25}`,
			"zk:blacklist-remove:www.example.co.uk:otherapp",
			`{"domain":"www.example.co.uk","uuid":"u2"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.FlushAll(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := handle(t, c, request(t, tc.raw)); err != nil {
				t.Fatal(err)
			}
			got := stringKeys(t, c)
			value, ok := got[tc.key]
			if !ok || len(got) != 1 {
				t.Fatalf("Redis holds %v, want only %s", got, tc.key)
			}
			if g, w := decodeNumbers(t, value), decodeNumbers(t, tc.value); !reflect.DeepEqual(g, w) {
				t.Errorf("%s = %s, want %s", tc.key, value, tc.value)
			}
		})
	}
}

func TestHandleRejectsDomainUpdateWithoutHitsAndWindow(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	const who = `"uuid":"someuuid","appid":"testapp","domain":"example.com","action":"domain-update"`
	for name, extra := range map[string]string{
		"neither (defaults 0)":       ``,
		"hits 0":                     `,"hits":0,"window":60`,
		"window 0":                   `,"hits":10,"window":0`,
		"hits -0 (the integer zero)": `,"hits":-0,"window":60`,
		"only hits":                  `,"hits":10`,
	} {
		t.Run(name, func(t *testing.T) {
			err := handle(t, c, request(t, `{`+who+extra+`}`))
			if !plugin.IsReject(err) {
				t.Errorf("Handle = %v, want a rejection", err)
			}
			if got := stringKeys(t, c); len(got) != 0 {
				t.Errorf("Redis holds %v after a rejected request, want nothing", got)
			}
		})
	}
}

func TestHandleTwiceLeavesTheSameState(t *testing.T) {
	c := harness.StartRedis(t).TestClient(t)
	req := request(t, `{"uuid":"someuuid","appid":"testapp","domain":"example.com","action":"domain-update","hits":10,"window":60}`)
	if err := handle(t, c, req); err != nil {
		t.Fatal(err)
	}
	first := stringKeys(t, c)
	if err := handle(t, c, req); err != nil {
		t.Fatal(err)
	}
	if second := stringKeys(t, c); !reflect.DeepEqual(first, second) || len(first) != 1 {
		t.Errorf("after a repeated Handle Redis holds %v, want %v (one key)", second, first)
	}
}
