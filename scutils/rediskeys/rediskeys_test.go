package rediskeys_test

import (
	"fmt"
	"path"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

func TestDomainMatchesTLDExtract(t *testing.T) {
	// Twice: the second answers come from the cache of recent hosts; and
	// again after more hosts than it keeps.
	for pass := range 3 {
		if pass == 2 {
			for i := range 10001 {
				rediskeys.Domain(fmt.Sprintf("h%d.example.org", i))
			}
		}
		domainsMatchTLDExtract(t)
	}
}

func domainsMatchTLDExtract(t *testing.T) {
	t.Helper()
	for host, want := range map[string]string{
		"www.example.com":      "example.com",
		"example.com":          "example.com",
		"WWW.Example.COM":      "example.com",
		"news.bbc.co.uk":       "bbc.co.uk",
		"foo.github.io":        "github.io",
		"shop.blogspot.com":    "blogspot.com",
		"127.0.0.1":            "127.0.0.1.",
		"::1":                  "::1.",
		"localhost":            "localhost.",
		"a.b.internal":         "internal.",
		"co.uk":                ".co.uk",
		"istresearch.com.":     "istresearch.com",
		"dmoz.org":             "dmoz.org",
		"city.kawasaki.jp":     "city.kawasaki.jp",
		"www.city.kawasaki.jp": "city.kawasaki.jp",
	} {
		if got := rediskeys.Domain(host); got != want {
			t.Errorf("Domain(%q) = %q, want %q", host, got, want)
		}
	}
}

func TestQueueKeyForURL(t *testing.T) {
	for raw, want := range map[string]string{
		"http://istresearch.com":             "link:istresearch.com:queue",
		"https://www.dmoz.org/path?q=1#frag": "link:dmoz.org:queue",
		"http://127.0.0.1:8080/page":         "link:127.0.0.1.:queue",
		"http://[::1]:8080/":                 "link:::1.:queue",
		"http://localhost/":                  "link:localhost.:queue",
	} {
		got, err := rediskeys.QueueKeyForURL("link", raw)
		if err != nil || got != want {
			t.Errorf("QueueKeyForURL(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, bad := range []string{"", "not a url", "ftp://example.com", "http://", "/relative/path", "http://%zz", "mailto:a@b.com"} {
		if got, err := rediskeys.QueueKeyForURL("link", bad); err == nil {
			t.Errorf("QueueKeyForURL(%q) = %q, want an error", bad, got)
		}
	}
}

func TestKeyFormats(t *testing.T) {
	for got, want := range map[string]string{
		rediskeys.TimeoutKey("link", "testapp", "abc"):                   "timeout:link:testapp:abc",
		rediskeys.ActionKey("info", "link", "testapp", ""):               "info:link:testapp",
		rediskeys.ActionKey("stop", "link", "testapp", "abc"):            "stop:link:testapp:abc",
		rediskeys.StatsRequestKey("kafka-monitor", "testapp"):            "statsrequest:kafka-monitor:testapp",
		rediskeys.ZooKeeperKey("domain-update", "dmoz.org", "testapp"):   "zk:domain-update:dmoz.org:testapp",
		rediskeys.BlacklistKey("link"):                                   "link:blacklist",
		rediskeys.HeartbeatKey("kafka-monitor", "host1", "e2be29329410"): "stats:kafka-monitor:self:host1:e2be29329410",
		rediskeys.StatsKey("kafka-monitor", "total"):                     "stats:kafka-monitor:total",
		rediskeys.CrawlerHeartbeatKey("host1", "link", "abc"):            "stats:crawler:host1:link:abc",
		rediskeys.CrawlerStatusKey("host1", "link", "200"):               "stats:crawler:host1:link:200",
		rediskeys.RestPollKey("u1"):                                      "rest:poll:u1",
		rediskeys.DupeFilterKey("link", "c1"):                            "link:dupefilter:c1",
		rediskeys.DomainMaxPageKey("link", "a.com", "c1"):                "link:domain_max_page_filter:a.com:c1",
		rediskeys.GlobalPageCountKey("link", "a.com", "c1"):              "link:global_page_count_filter:a.com:c1",
		rediskeys.ThrottleKey("link", "1.2.3.4", "a.com", true, true):    "link:1.2.3.4:a.com",
		rediskeys.ThrottleKey("link", "1.2.3.4", "a.com", false, true):   "1.2.3.4:a.com",
		rediskeys.ThrottleKey("link", "1.2.3.4", "a.com", true, false):   "link:a.com",
		rediskeys.ThrottleKey("link", "1.2.3.4", "a.com", false, false):  "a.com",
		rediskeys.LeaseKey("link"):                                       "leases:link",
		rediskeys.LockKey("info:link:app"):                               "lock:info:link:app",
		rediskeys.FailuresKey("info:link:app"):                           "lock:info:link:app:failures",
		rediskeys.DomainConfigKey("/scrapy-cluster/crawler/all"):         "domainconfig:/scrapy-cluster/crawler/all",
		rediskeys.RecrawlKey("link", "app", "c1"):                        "recrawl:link:app:c1:schedule",
		rediskeys.LedgerRunsKey("link", "app", "c1"):                     "ledger:link:app:c1:runs",
		rediskeys.DomainConfigChannel("/scrapy-cluster/crawler/all"):     "domainconfig:/scrapy-cluster/crawler/all:changed",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestParseQueueKeyTakesOnlyDomainQueues(t *testing.T) {
	for key, want := range map[string]string{
		"link:istresearch.com:queue":   "link istresearch.com",
		"link:127.0.0.1.:queue":        "link 127.0.0.1.",
		"link:::1.:queue":              "link ::1.",
		"link:fe80::1.:queue":          "link fe80::1.",
		"link:foo:bar:queue":           "",
		"link:istresearch.com:queue:x": "",
		"queue":                        "",
		"a:queue":                      "",
		":example.com:queue":           "",
		"link::queue":                  "",
		"link:istresearch.com:queues":  "",
	} {
		if got := joined(rediskeys.ParseQueueKey(key)); got != want {
			t.Errorf("ParseQueueKey(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestQueuePatternEscapesGlobCharacters(t *testing.T) {
	if got := rediskeys.QueuePattern(`we*ird[1]`); got != `we\*ird\[1\]:*:queue` {
		t.Fatal(got)
	}
	if got := rediskeys.GlobEscape(`a?b\c`); got != `a\?b\\c` {
		t.Fatal(got)
	}
}

func TestSessionKeysMatchNoPatternOfTheOriginal(t *testing.T) {
	for _, ids := range [][2]string{{"app", "crawl"}, {"dupefilter", "x"}, {"a:b", "queue"}, {"x", ":blacklist"}} {
		k := rediskeys.SessionKey(ids[0], ids[1])
		if !strings.HasPrefix(k, "session:") || len(k) != len("session:")+32 || strings.Count(k, ":") != 1 {
			t.Errorf("SessionKey(%q, %q) = %q", ids[0], ids[1], k)
		}
	}
	if rediskeys.SessionKey("a", "bc") == rediskeys.SessionKey("ab", "c") {
		t.Error("different crawls share a key")
	}
}

func TestRenderQueueKeys(t *testing.T) {
	if got := rediskeys.RenderQueueKey("link", "example.com"); got != "link:example.com:renderqueue" {
		t.Fatal(got)
	}
	if got := rediskeys.RenderQueuePattern(`we*ird`); got != `we\*ird:*:renderqueue` {
		t.Fatal(got)
	}
	if got := rediskeys.QueueKeyFor("link", "a.com", true); got != "link:a.com:renderqueue" {
		t.Fatal(got)
	}
	if got := rediskeys.QueueKeyFor("link", "a.com", false); got != "link:a.com:queue" {
		t.Fatal(got)
	}
	for key, want := range map[string]string{
		"link:istresearch.com:renderqueue": "link istresearch.com",
		"link:::1.:renderqueue":            "link ::1.",
		"link:127.0.0.1.:renderqueue":      "link 127.0.0.1.",
		"link:foo:bar:renderqueue":         "",
		"link::renderqueue":                "",
		"link:a.com:queue":                 "",
		"renderqueue":                      "",
		"link:a.com:renderqueues":          "",
	} {
		if got := joined(rediskeys.ParseRenderQueueKey(key)); got != want {
			t.Errorf("ParseRenderQueueKey(%q) = %q, want %q", key, got, want)
		}
	}
	if _, _, render, ok := rediskeys.ParseAnyQueueKey("link:a.com:renderqueue"); !ok || !render {
		t.Error("ParseAnyQueueKey does not take a render queue")
	}
	if _, _, render, ok := rediskeys.ParseAnyQueueKey("link:a.com:queue"); !ok || render {
		t.Error("ParseAnyQueueKey does not take a queue")
	}
}

// A render queue is never taken for an ordinary queue, by this package's
// parser or by the patterns the original's components scan, and no
// ordinary queue for a render queue.
func TestRenderQueuesMatchNoPatternOfTheOriginal(t *testing.T) {
	originals := []string{"*:*:queue", "link:*:queue", "info:*", "stop:*", "statsrequest:*", "zk:*", "stats:*",
		"timeout:*", "*:dupefilter:*", "*:blacklist"}
	for _, domain := range []string{"example.com", "127.0.0.1.", "::1.", "queue.", "blacklist."} {
		key := rediskeys.RenderQueueKey("link", domain)
		for _, p := range append(originals, rediskeys.QueuePattern("link"), rediskeys.AllQueuesPattern) {
			if ok, _ := path.Match(p, key); ok {
				t.Errorf("render queue %q matches %q", key, p)
			}
		}
		if _, _, ok := rediskeys.ParseQueueKey(key); ok {
			t.Errorf("ParseQueueKey takes render queue %q", key)
		}
		queue := rediskeys.QueueKey("link", domain)
		if ok, _ := path.Match(rediskeys.RenderQueuePattern("link"), queue); ok {
			t.Errorf("queue %q matches the render queue pattern", queue)
		}
		if ok, _ := path.Match(rediskeys.AllRenderQueuesPattern, key); !ok {
			t.Errorf("render queue %q does not match %q", key, rediskeys.AllRenderQueuesPattern)
		}
	}
}

// joined is a parsed key's spider and domain, "spider domain", or "".
func joined(spider, domain string, ok bool) string {
	if !ok {
		return ""
	}
	return spider + " " + domain
}
