package zookeeper_test

import (
	"context"
	"reflect"
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
		{"domain-update with negative hits (only zero is refused, as the original does)",
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
			if g, w := plugintest.DecodeNumbers(t, value), plugintest.DecodeNumbers(t, tc.value); !reflect.DeepEqual(g, w) {
				t.Errorf("%s = %s, want %s", tc.key, value, tc.value)
			}
		})
	}
}

func TestValidateRefusesWhatCouldNeverApply(t *testing.T) {
	const who = `"uuid":"someuuid","appid":"testapp"`
	for _, tc := range []struct{ name, raw, reason string }{
		{"a domain-update without hits and window (defaults 0)",
			`{` + who + `,"domain":"example.com","action":"domain-update"}`, "hits: missing or 0; a domain-update needs non-zero hits and window"},
		{"a domain-update with hits 0", `{` + who + `,"domain":"example.com","action":"domain-update","hits":0,"window":60}`, "hits: missing or 0"},
		{"a domain-update with window 0", `{` + who + `,"domain":"example.com","action":"domain-update","hits":10,"window":0}`, "window: missing or 0"},
		{"a domain-update with hits -0 (the integer zero)", `{` + who + `,"domain":"example.com","action":"domain-update","hits":-0,"window":60}`, "hits: missing or 0"},
		{"a domain-update with only hits", `{` + who + `,"domain":"example.com","action":"domain-update","hits":10}`, "window: missing or 0"},
		{"a domain-update with hits beyond 2^53", `{` + who + `,"domain":"example.com","action":"domain-update","hits":9007199254740993,"window":60}`,
			"hits: 9007199254740993 is out of range"},
		{"a domain-update of a subdomain", `{` + who + `,"domain":"www.example.co.uk","action":"domain-update","hits":10,"window":60}`,
			`domain: "www.example.co.uk" is not a domain as queues name it (the registered domain of a URL's host, lower case): use "example.co.uk"`},
		{"a blacklist-update of a URL", `{` + who + `,"domain":"http://www.ebay.com/","action":"blacklist-update"}`, `use "ebay.com"`},
		{"a blacklist-update with a port", `{` + who + `,"domain":"ebay.com:8080","action":"blacklist-update"}`, `use "ebay.com"`},
		{"a blacklist-update in capitals", `{` + who + `,"domain":"EBAY.com","action":"blacklist-update"}`, `use "ebay.com"`},
		{"a domain-update of an IP address without the queue's dot", `{` + who + `,"domain":"127.0.0.1","action":"domain-update","hits":1,"window":1}`, `use "127.0.0.1."`},
		{"an empty domain", `{` + who + `,"domain":"","action":"domain-remove"}`, `domain: "" is empty or holds spaces or control characters`},
		{"a domain with a space", `{` + who + `,"domain":"ebay .com","action":"blacklist-remove"}`, `domain: "ebay .com" is empty`},
		{"a domain with a newline", `{` + who + `,"domain":"ebay.com\n","action":"blacklist-update"}`, `is empty or holds spaces or control characters`},
	} {
		t.Run(tc.name, func(t *testing.T) { plugintest.ExpectRefused(t, zookeeper.Handler{}, tc.raw, tc.reason) })
	}
}

func TestValidateAcceptsQueueDomainsAndAnyRemove(t *testing.T) {
	const who = `"uuid":"someuuid","appid":"testapp"`
	for _, raw := range []string{
		`{` + who + `,"domain":"example.com","action":"domain-update","hits":10,"window":60,"scale":0.5}`,
		`{` + who + `,"domain":"example.co.uk","action":"domain-update","hits":-5,"window":60,"scale":0}`,
		`{` + who + `,"domain":"127.0.0.1.","action":"domain-update","hits":1,"window":1}`,
		`{` + who + `,"domain":"::1.","action":"blacklist-update"}`,
		`{` + who + `,"domain":"localhost.","action":"blacklist-update"}`,
		`{` + who + `,"domain":"bücher.de","action":"blacklist-update"}`,
		// A remove may name what an update would refuse: an entry written by hand can go.
		`{` + who + `,"domain":"www.example.co.uk","action":"blacklist-remove"}`,
		`{` + who + `,"domain":"example.com:8080","action":"domain-remove"}`,
	} {
		if _, err := plugintest.Validate(t, zookeeper.Handler{}, raw); err != nil {
			t.Errorf("Validate(%s) = %v, want it accepted", raw, err)
		}
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
